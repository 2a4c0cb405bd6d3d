"""The GPUDirect RDMA paths a node offers, so that NICs read and write GPU memory directly.

- `peermem`: the `nvidia_peermem` module (or the older `nv_peer_mem`) loaded and registered with
  the RDMA stack. NCCL's InfiniBand transport (its GDR support check in src/transport/net_ib)
  tests for any of the files in `PEERMEM_FILES`; the agent tests the same ones.
- `dmabuf`: best-effort. What decides it lies partly out of the agent's sight (CUDA 11.7 or
  newer, rdma-core's `ibv_reg_dmabuf_mr`, the NIC driver); the agent sees the two signs a node
  must show: the NVIDIA open kernel module, the only one that exports GPU memory as dma-buf, and
  a kernel of 5.12 or newer, the first where RDMA registers dma-buf memory (ib_umem_dmabuf).
  The module is the open one when /proc/driver/nvidia/version says "Open Kernel Module"; where
  that file cannot be read, when /sys/module/nvidia/taint lacks `P` (the proprietary module
  taints the kernel with it; the open one, dual MIT/GPL, does not). The kernel is
  /proc/sys/kernel/osrelease. A container's own /proc serves both: they are the kernel's, not
  the container's. A file that cannot be read or parsed is no sign; it never fails a scan.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent.attributes import read_attribute
from kube_rdma.core.topology import Gdr

PEERMEM_FILES = (
    "kernel/mm/memory_peers/nv_mem/version",
    "kernel/mm/memory_peers/nv_mem_nc/version",
    "module/nvidia_peermem/version",
)
DMABUF_KERNEL = (5, 12)
OPEN_MODULE = "Open Kernel Module"
_RELEASE = re.compile(r"^(\d+)\.(\d+)")


def gdr_paths(sysfs_root: Path, proc_root: Path) -> Gdr:
    return Gdr(
        peermem=any((sysfs_root / f).exists() for f in PEERMEM_FILES),
        dmabuf=_open_module(sysfs_root, proc_root) and _kernel(proc_root) >= DMABUF_KERNEL,
    )


def _open_module(sysfs_root: Path, proc_root: Path) -> bool:
    version = read_attribute(proc_root / "driver/nvidia/version")
    if version is not None:
        return OPEN_MODULE in version
    taint = read_attribute(sysfs_root / "module/nvidia/taint")
    return taint is not None and "P" not in taint


def _kernel(proc_root: Path) -> tuple[int, int]:
    """`6.8.0-45-generic` -> (6, 8); (0, 0) when unknown."""
    match = _RELEASE.match(read_attribute(proc_root / "sys/kernel/osrelease") or "")
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)
