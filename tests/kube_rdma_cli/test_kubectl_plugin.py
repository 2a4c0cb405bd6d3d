"""`kubectl rdma ...` works: kubectl finds the installed `kubectl-rdma` console script on PATH
and runs it with the rest of the command line, as it runs every plugin."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kube_rdma_cli import dispatch as cli

PLUGIN = Path(sys.executable).parent / "kubectl-rdma"
KUBECTL = shutil.which("kubectl")

pytestmark = [
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
    pytest.mark.skipif(not PLUGIN.exists(), reason="kube-rdma is not installed in this venv"),
]


def kubectl(path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """kubectl with only the plugin's folder and kubectl's own on PATH."""
    assert KUBECTL is not None
    env = {**os.environ, "PATH": os.pathsep.join([str(path), str(Path(KUBECTL).parent)])}
    return subprocess.run(
        [KUBECTL, *argv], capture_output=True, text=True, timeout=60, env=env, check=False
    )


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    (tmp_path / "kubectl-rdma").symlink_to(PLUGIN)
    return tmp_path


def test_kubectl_runs_the_plugin(plugin_path: Path) -> None:
    done = kubectl(plugin_path, "rdma", "--version")
    assert (done.returncode, done.stdout) == (0, f"kube-rdma {cli.version()}\n"), done.stderr


def test_kubectl_passes_the_subcommand_and_its_flags(plugin_path: Path) -> None:
    done = kubectl(plugin_path, "rdma", "explain", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: kube-rdma explain ")
    assert "the extender's port in that pod (default: 8888)" in " ".join(done.stdout.split())


def test_kubectl_lists_the_plugin(plugin_path: Path) -> None:
    listed = kubectl(plugin_path, "plugin", "list").stdout.splitlines()
    assert str(plugin_path / "kubectl-rdma") in listed
