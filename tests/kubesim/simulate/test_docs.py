"""docs/simulate.md's snippets that make a cluster run as written, from another folder than the
repository's root: a reader copies them into a shell wherever they are."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from kubesim.simulate.cluster import load_cluster

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "simulate.md"


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_the_clustergen_snippet_runs_from_any_folder(tmp_path: Path) -> None:
    [block] = [b for b in shell_blocks(DOC.read_text()) if "testbed.clustergen" in b]
    # The reader's checkout is this one; their virtualenv's python, the tests'.
    script = re.sub(r"^KUBE_RDMA=\S+", f"KUBE_RDMA={ROOT}", block, flags=re.MULTILINE)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PATH": path}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    cluster = load_cluster(tmp_path / "dra.json")
    assert len(cluster.nodes) == 32
    assert cluster.model.cluster.dra.extended_resources() == {"nvidia.com/gpu"}
