"""A GB300-like compute tray in sysfs: four GPUs, each behind a ConnectX-8 whose Data Direct
function sits under the GPU's PCIe switch while the NIC's own function hangs elsewhere.

The layout follows rdma-core's rdma_topo (kernel-boot/rdma_topo, __get_nvcx_complex), the tool
NVIDIA ships for these systems. Below each GPU's Grace root port (every root port its own PCI
domain) sits the ConnectX-8's switch; one downstream port holds the Data Direct function
(15b3:2100), another a second switch with the GPU:

    root port -> switch -> Data Direct function
                        -> switch -> GPU

The NIC's own function (15b3:1023, ConnectX-8) hangs from another root port of the same
socket. Both functions' VPDs carry the adapter's UUID (`V3`), by which rdma_topo matches them,
and a `VU`, which the kernel's Data Direct driver requires. The values are invented in the
format ConnectX cards write (serial numbers like `MT2314XZ0JUZ`; `VU` the serial number then
`MLNXS0D0F0`); what a Data Direct function's own `VU` holds is not published, and only its
presence matters to the agent. The Data Direct function's class code is not published either:
the agent goes by vendor and device ID, and this tree gives it the NIC class.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from testbed.builders.sysfs_tree import (
    MELLANOX,
    NIC_CLASS,
    PortSpec,
    SysfsTree,
    roce_gids,
    vpd_image,
)

GPU_DOMAINS = ("0008", "0009", "0018", "0019")
NIC_DOMAINS = ("0000", "0002", "0010", "0012")
CONNECTX_8 = "0x1023"
DATA_DIRECT = "0x2100"
PRODUCT = "NVIDIA ConnectX-8 SuperNIC"
CROSSED = (1, 0, 3, 2)
"""GPU i's adapter: the NIC names (mlx5_k by PCI address) and the GPUs' order disagree, as
nothing on such a tray promises that they agree."""


def serial(adapter: int) -> str:
    return f"MT2450XZ0A{adapter}C"


def adapter_uuid(adapter: int) -> str:
    return f"4f1c2d7e9a3bef11800058a2e10d{adapter:04x}"


def adapter_vpd(adapter: int, function: str = "S0D0F0") -> list[tuple[str, str]]:
    """The read-only keywords of one of an adapter's functions, in a ConnectX card's order."""
    return [
        ("PN", "900-9X81E-00EX-ST0"),
        ("EC", "A7"),
        ("SN", serial(adapter)),
        ("V3", adapter_uuid(adapter)),
        ("V0", "PCIeGen6 x16"),
        ("VU", f"{serial(adapter)}MLNX{function}"),
    ]


def gb300_node(
    root: Path, data_direct: bool = True, adapters: Sequence[int] = CROSSED
) -> SysfsTree:
    """Two sockets (NUMA 0 and 1), two GPUs and two ConnectX-8 NICs each: GPU i's Data Direct
    function belongs to the NIC mlx5_k, k = adapters[i]. Without `data_direct` the same tray
    with no Data Direct functions: each NIC reaches its GPU through its own function."""
    tree = SysfsTree(root)
    for adapter, domain in enumerate(NIC_DOMAINS):
        _nic(tree, adapter, domain)
    for index, domain in enumerate(GPU_DOMAINS):
        numa = index // 2
        host = tree.host_bridge(f"{domain}:00")
        root_port = tree.bridge(host, f"{domain}:00:00.0", numa)
        dma_port, gpu_port = tree.switch(
            root_port, f"{domain}:01:00.0", [f"{domain}:02:00.0", f"{domain}:02:01.0"], numa
        )
        if data_direct:
            bdf = f"{domain}:03:00.0"
            tree.function(dma_port, bdf, MELLANOX, NIC_CLASS, numa, DATA_DIRECT)
            tree.vpd(bdf, vpd_image(PRODUCT, adapter_vpd(adapters[index], "S1D0F0")))
        (gpu_slot,) = tree.switch(gpu_port, f"{domain}:04:00.0", [f"{domain}:05:00.0"], numa)
        tree.gpu(gpu_slot, f"{domain}:06:00.0", numa)
    return tree


def _nic(tree: SysfsTree, adapter: int, domain: str) -> None:
    numa = adapter // 2
    host = tree.host_bridge(f"{domain}:00")
    root_port = tree.bridge(host, f"{domain}:00:00.0", numa)
    netdev = f"enP{int(domain, 16)}p1s0np0"
    bdf = f"{domain}:01:00.0"
    function = tree.nic(root_port, bdf, numa, {netdev: 0}, device=CONNECTX_8)
    tree.vpd(bdf, vpd_image(PRODUCT, adapter_vpd(adapter)))
    gids = roce_gids(netdev, f"10.{adapter}.0.21", 0x2100 + adapter)
    tree.rdma(f"mlx5_{adapter}", function, {1: PortSpec(rate="800 Gb/sec (4X XDR)", gids=gids)})
