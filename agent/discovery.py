"""One scan of the node: sysfs first, `nvidia-smi topo -m` where sysfs cannot see the GPUs.

sysfs knows everything about the RDMA devices and, on a node, the GPUs and the PCI hierarchy
between them. Inside some containers /sys/bus/pci is hidden or flattened; there the matrix that
`nvidia-smi topo -m` prints (from a file, or run when present) supplies the GPUs and the
GPU-NIC levels, and sysfs still supplies the ports. Whatever the matrix cannot know (a GPU's PCI
address, a NIC's ports when sysfs lacks it) stays null or empty. The GPUDirect RDMA paths come
from sysfs and /proc whichever source gives the GPUs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from agent.nvtopo import TopoMatrix, parse_topo
from agent.sysfs import PROC, Problems, scan
from agent.vpd_keywords import VpdReader
from kube_rdma.core.topology import Gpu, Nic, Pair, Topology

NVIDIA_SMI_TIMEOUT_SECONDS = 30


class DiscoveryError(Exception):
    """The node's topology cannot be read; the message says from where and why."""


def discover(
    sysfs_root: Path,
    topo_file: Path | None = None,
    proc_root: Path = PROC,
    problems: Problems | None = None,
    vpd: VpdReader | None = None,
) -> Topology:
    """The node's topology; with `problems`, sysfs that cannot be read is left out and noted
    there (agent/sysfs.py) instead of failing the scan; `vpd` as agent/sysfs.py's scan takes."""
    topology = scan(sysfs_root, proc_root, problems, vpd)
    text = _topo_text(topo_file) if topo_file else None
    if text is None and not topology.gpus and shutil.which("nvidia-smi"):
        text = _run_nvidia_smi()
    if text is None:
        return topology
    return merge(topology, parse_topo(text))


def merge(topology: Topology, matrix: TopoMatrix) -> Topology:
    """GPUs and pairs from the matrix, NIC details from sysfs where it has them."""
    known = {nic.name: nic for nic in topology.nics}
    nics = [known.get(name) or Nic(name=name) for name in matrix.nics]
    nics += [nic for name, nic in known.items() if name not in matrix.nics]
    return Topology(
        gpus=tuple(Gpu(index=g.index, numa=g.numa) for g in matrix.gpus),
        nics=tuple(nics),
        pairs=tuple(Pair(gpu=g, nic=n, level=level) for g, n, level in matrix.pairs),
        source="nvidia-smi",
        gdr=topology.gdr,
    )


def _topo_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise DiscoveryError(f"{path}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise DiscoveryError(
            f"{path}: not text (byte {e.start} is not UTF-8); give the output of "
            "`nvidia-smi topo -m` as it prints it"
        ) from e


def _run_nvidia_smi() -> str:
    try:
        done = subprocess.run(
            ["nvidia-smi", "topo", "-m"],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DiscoveryError(f"nvidia-smi topo -m failed: {e}") from e
    if done.returncode != 0:
        raise DiscoveryError(
            f"nvidia-smi topo -m exited {done.returncode}: {done.stderr.strip()[:300]}"
        )
    return done.stdout
