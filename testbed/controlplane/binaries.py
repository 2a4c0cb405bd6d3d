"""The control plane's binaries: built once per machine by build.sh, found in its cache."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

BUILD_SCRIPT = Path(__file__).with_name("build.sh")


@dataclass(frozen=True)
class Binaries:
    folder: Path
    etcd: str

    @property
    def apiserver(self) -> str:
        return str(self.folder / "kube-apiserver")

    @property
    def scheduler(self) -> str:
        return str(self.folder / "kube-scheduler")

    @property
    def controller_manager(self) -> str:
        return str(self.folder / "kube-controller-manager")

    @property
    def version(self) -> str:
        return self.folder.name.removeprefix("k8s-")


def ensure_binaries() -> Binaries:
    """Build (first run on a machine, minutes) or reuse (seconds) the binaries."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], check=True, stdout=subprocess.PIPE)
    folder = Path(done.stdout.decode().strip().splitlines()[-1])
    etcd = shutil.which("etcd")
    if etcd is None:
        raise RuntimeError("etcd is not on PATH: build.sh installs etcd-server, run it as root")
    return Binaries(folder, etcd)
