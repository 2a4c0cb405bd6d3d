"""The wheel ships the product and nothing else: no test or bench tooling, no tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IGNORED = (".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", "demo-certs")


def test_the_wheel_holds_only_the_product(tmp_path: Path) -> None:
    # A copy of the tree (tests, testbed and bench included), so the build leaves nothing behind
    # in the checkout; then the PEP 517 hook pip would call, without pip's index round trips.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*IGNORED))
    build = f"from setuptools import build_meta; build_meta.build_wheel({str(tmp_path)!r})"
    subprocess.run([sys.executable, "-c", build], check=True, cwd=source, capture_output=True)
    (wheel,) = tmp_path.glob("kube_rdma-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = archive.read(entry_points).decode()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith("dist-info")}
    assert tops == {
        "kube_rdma",
        "kube_rdma_cli",
        "fabric",
        "kubesim",
        "webhook",
        "extender",
        "agent",
        "certs",
    }
    assert scripts.split() == [
        "[console_scripts]",
        "kube-rdma",
        "=",
        "kube_rdma_cli.dispatch:main",
        "kubectl-rdma",
        "=",
        "kube_rdma_cli.dispatch:main",
    ]
