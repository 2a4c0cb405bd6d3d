"""GPU-NIC PCIe relation from the PCI hierarchy, as `nvidia-smi topo -m` classifies it.

sysfs places every PCI function under its chain of bridges
(`/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0`): the first
component is the host bridge (root complex), then the root port, then the upstream and
downstream ports of each PCIe switch. nvidia-smi counts switches, not bridges: two devices under
downstream ports of one switch are PIX although three bridge functions sit between them.
So below the deepest common ancestor, a device reached through one downstream port (two path
components) is one switch away; anything deeper crosses further switches.
"""

from __future__ import annotations

from collections.abc import Sequence

from kube_rdma.core.topology import Level


def pcie_level(
    gpu_path: Sequence[str], gpu_numa: int | None, nic_path: Sequence[str], nic_numa: int | None
) -> Level:
    """The relation of two PCI functions given their sysfs paths below /sys/devices."""
    if gpu_path[0] != nic_path[0]:
        if gpu_numa is not None and gpu_numa == nic_numa:
            return Level.NODE
        # Different NUMA nodes, or unknown ones: the conservative answer is the worst.
        return Level.SYS
    common = 0
    for a, b in zip(gpu_path, nic_path, strict=False):
        if a != b:
            break
        common += 1
    if common == 1:
        return Level.PHB  # the paths part at the host bridge
    below_gpu, below_nic = len(gpu_path) - common, len(nic_path) - common
    if below_gpu <= 2 and below_nic <= 2:
        return Level.PIX
    return Level.PXB
