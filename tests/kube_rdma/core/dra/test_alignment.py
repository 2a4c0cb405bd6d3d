"""Published devices matched with the agent's topology by PCI address."""

from __future__ import annotations

from kube_rdma.core.dra.alignment import align
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.topology import Gpu, Nic, Topology
from tests.kube_rdma.core.dra.fixtures import gpu_slice, nic_slice

TOPOLOGY = Topology(
    gpus=tuple(Gpu(index=i, pci=f"0000:{0x18 + i:02X}:00.0") for i in range(8)),
    nics=tuple(Nic(name=f"mlx5_{i}", pci=f"{0x20 + i:02x}:00.0") for i in range(7)),
)


def test_devices_take_the_agents_view_at_their_address() -> None:
    index = DraIndex()
    index.replace_slices([gpu_slice("n1"), nic_slice("n1")])
    devices = index.node("n1")
    assert devices is not None
    found = align(devices, TOPOLOGY)
    assert found.gpus[("gpu.nvidia.com", "n1", "gpu-3")] == 3
    assert found.nics[("dra.net", "n1", "pci-0000-21-00-0")] == "mlx5_1"
    assert found.unmatched == ("NIC pci-0000-27-00-0 (0000:27:00.0)",)
