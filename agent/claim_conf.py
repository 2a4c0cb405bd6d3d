"""Which of the RDMA devices a pod sees its ResourceClaims gave it, with their interfaces and
addresses: what `kube-rdma nccl-conf` takes from the claims rather than guessing.

Each claim device (agent/claim_devices.py) is found among the RDMA devices of the pod's view as
the node agent finds published devices (agent/dra_devices.py): by its RDMA device name (dranet's
`rdmaDevice`), PCI address (`pciAddress`, `resource.kubernetes.io/pciBusID`) or interface (its
network data's `interfaceName`, against the ports' netdevs), one identifier agreeing and none
contradicting. A device that matches no RDMA device (a GPU, a NIC without RDMA) is left out, with
a note when it carries network data; one that matches several, or that shares its RDMA device
with another claim device, is left out with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.claim_devices import ClaimDevice
from agent.dra_devices import DeviceId, Published, match
from agent.pod_network import PodAddress
from kube_rdma.core.topology import Nic


@dataclass(frozen=True)
class FromClaims:
    nics: tuple[Nic, ...]
    """The claimed RDMA devices, as the pod sees them."""
    interfaces: tuple[str, ...]
    """Their interfaces, from the claims' network data."""
    addresses: tuple[PodAddress, ...]
    """Their addresses, from the claims' network data, each on its interface."""
    devices: tuple[str, ...]
    """The claim devices used, `driver/pool/device`."""
    notes: tuple[str, ...]


def from_claims(devices: Sequence[ClaimDevice], nics: Sequence[Nic]) -> FromClaims:
    published = [
        Published(
            DeviceId(d.driver, d.pool, d.name),
            pci=d.pci,
            rdma=d.rdma,
            netdevs=frozenset({d.interface} if d.interface else ()),
        )
        for d in devices
    ]
    by_id = {DeviceId(d.driver, d.pool, d.name): d for d in devices}
    found = match(nics, published)
    chosen = {nic: by_id[device.id] for nic, device in found.devices.items()}
    used = {str(d) for d in chosen.values()}
    notes = [*found.skipped]
    notes += [
        f"claim device {d} ({_network(d)}) is no RDMA device this pod sees"
        for d in devices
        if d.networked and str(d) not in used and not _named_in(str(d), found.skipped)
    ]
    ordered = [nic for nic in nics if nic.name in chosen]
    claimed = [chosen[nic.name] for nic in ordered]
    return FromClaims(
        nics=tuple(ordered),
        interfaces=tuple(dict.fromkeys(d.interface for d in claimed if d.interface)),
        addresses=tuple(PodAddress(ip.ip, d.interface) for d in claimed for ip in d.ips),
        devices=tuple(str(d) for d in claimed),
        notes=tuple(notes),
    )


def _network(device: ClaimDevice) -> str:
    ips = ", ".join(str(ip) for ip in device.ips)
    return ", ".join(part for part in (device.interface, ips) if part) or "no network data"


def _named_in(device: str, lines: Sequence[str]) -> bool:
    return any(device in line for line in lines)
