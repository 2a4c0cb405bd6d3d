"""DRA devices matched with the agent's topology document by PCI address.

DRA's only standard placement attribute, `resource.kubernetes.io/pcieRoot`, names the root
complex (the host bridge), not the PCIe switch, so it cannot tell PIX from PXB or PHB. The
agent's topology document has those levels for its GPUs and NICs, each with its PCI address;
matched by address, a published device takes the agent's view of it (kube_rdma/core/dra/
kinds.py says where each driver publishes the address). A device the agent does not list is
one the extender's GPU-NIC levels say nothing about.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kube_rdma.core.dra.index import NodeDevices
from kube_rdma.core.dra.kinds import pci_address
from kube_rdma.core.dra.shapes import DeviceId
from kube_rdma.core.topology import Topology


@dataclass(frozen=True)
class Alignment:
    gpus: Mapping[DeviceId, int]
    """A published GPU -> the index of the agent's GPU at its address."""
    nics: Mapping[DeviceId, str]
    """A published NIC -> the name of the agent's NIC at its address."""
    unmatched: tuple[str, ...]
    """Published devices the agent does not list, as `kind name (address)`."""


def normalized(address: str | None) -> str | None:
    if not address:
        return None
    address = address.lower()
    return address if address.count(":") == 2 else f"0000:{address}"


def align(devices: NodeDevices, topology: Topology) -> Alignment:
    gpu_at = {normalized(g.pci): g.index for g in topology.gpus if g.pci}
    nic_at = {normalized(n.pci): n.name for n in topology.nics if n.pci}
    gpus: dict[DeviceId, int] = {}
    nics: dict[DeviceId, str] = {}
    unmatched: list[str] = []
    for device, kind in devices.devices:
        address = normalized(pci_address(device))
        if kind == "gpu" and address in gpu_at:
            gpus[device.id] = gpu_at[address]
        elif kind == "nic" and address in nic_at:
            nics[device.id] = nic_at[address]
        else:
            unmatched.append(f"{kind.upper()} {device.name} ({address or 'no PCI address'})")
    return Alignment(gpus, nics, tuple(unmatched))
