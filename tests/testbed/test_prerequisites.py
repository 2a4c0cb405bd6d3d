"""`make test` names what is missing before any test runs: kubectl, or a kubectl too old."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.prerequisites import kubectl_problem

ROOT = Path(__file__).resolve().parents[2]


def fake_kubectl(folder: Path, answer: str) -> str:
    script = folder / "kubectl"
    script.write_text(f"#!/bin/sh\ncat <<'END'\n{answer}\nEND\n")
    script.chmod(0o755)
    return str(folder)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ('{"clientVersion": {"major": "1", "minor": "32+", "gitVersion": "v1.32.4"}}', None),
        ('{"clientVersion": {"major": "1", "minor": "37", "gitVersion": "v1.37.1"}}', None),
        (
            '{"clientVersion": {"major": "1", "minor": "31", "gitVersion": "v1.31.9"}}',
            "{path}/kubectl is kubectl v1.31.9, older than 1.32: install kubectl 1.32 or newer "
            "(https://kubernetes.io/docs/tasks/tools/)",
        ),
        (
            "error: unknown flag: --output",
            "{path}/kubectl does not say its version (kubectl version --client -o json): "
            "install kubectl 1.32 or newer (https://kubernetes.io/docs/tasks/tools/)",
        ),
    ],
)
def test_kubectl_versions(tmp_path: Path, answer: str, problem: str | None) -> None:
    path = fake_kubectl(tmp_path, answer)
    expected = problem.format(path=path) if problem else None
    assert kubectl_problem(path) == expected


def path_without_kubectl(shadow: Path) -> str:
    """$PATH with every folder that holds a kubectl replaced by `shadow`, holding the rest."""
    shadow.mkdir()
    kept = []
    for folder in map(Path, os.environ["PATH"].split(os.pathsep)):
        if not (folder / "kubectl").exists():
            kept.append(str(folder))
            continue
        for tool in folder.iterdir():
            if tool.name != "kubectl" and not (shadow / tool.name).exists():
                (shadow / tool.name).symlink_to(tool)
    return os.pathsep.join([str(shadow), *kept])


def test_make_test_fails_without_kubectl_and_names_it(tmp_path: Path) -> None:
    """`make test` with kubectl gone from PATH (python and make kept): it stops before linting."""
    env = {**os.environ, "PATH": path_without_kubectl(tmp_path / "bin")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), "test", f"PYTHON={sys.executable}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert done.stderr.splitlines()[0] == (
        "make test: kubectl is not on PATH; the manifest tests build the kustomizations with "
        "it: install kubectl 1.32 or newer (https://kubernetes.io/docs/tasks/tools/), then run "
        "make test again"
    )
