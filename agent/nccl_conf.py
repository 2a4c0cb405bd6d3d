"""Resolve, from inside a pod, the NCCL settings that make it use its own RDMA ports.

Only a look from the pod's own network namespace is always right: under macvlan every pod's
GIDs sit at different indexes of the same device's table (one pod at 4/5, the next at 6/7), a
ConnectX with two link-local entries puts the IPv4 pair at 4/5 rather than 2/3, and an SR-IOV
pod sees its VF under its own device name. So the pod's addresses are matched against the GID
tables it sees:
- RoCE: every ACTIVE Ethernet port whose table holds one of the pod's addresses as a GID of the
  wanted type (IPv4 GIDs are IPv4-mapped, `::ffff:a.b.c.d`; IPv6 GIDs are the address itself)
  is chosen, at the lowest such index (the one NCCL's own auto-selection would take).
- InfiniBand: GIDs carry no IP address, so every ACTIVE InfiniBand port is chosen, narrowed to
  those whose IPoIB interface holds one of the pod's addresses when the pod has such an interface.
`NCCL_IB_GID_INDEX` is one value for all devices (NCCL's net_ib.cc), so ports that need different
indexes cannot be served by this file. This module does no I/O: it turns the devices and the
pod's network into the file's lines and the problems found, each one line of text.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from agent.pod_network import Family, PodAddress, PodNetwork
from kube_rdma.core.topology import Nic, Port

RoceVersion = Literal[1, 2]
RESOLVED = ("NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME")
"""The variables this module writes; nothing else may set them in the file."""
LISTED_GIDS = 4
"""GID addresses named per port in the error line before the rest is counted."""


@dataclass(frozen=True)
class Wanted:
    roce_version: RoceVersion = 2
    family: Family = "ipv4"

    @property
    def gid_type(self) -> str:
        return f"RoCE v{self.roce_version}"

    @property
    def ip_version(self) -> int:
        return 4 if self.family == "ipv4" else 6

    @property
    def family_name(self) -> str:
        return "IPv4" if self.family == "ipv4" else "IPv6"


@dataclass(frozen=True)
class Rail:
    hca: str
    """`<device>:<port>`, as NCCL_IB_HCA names it."""
    gid_index: int | None
    """None on InfiniBand, where NCCL needs no GID index."""


@dataclass(frozen=True)
class Resolution:
    lines: tuple[str, ...]
    """The file's `KEY=VALUE` lines, in file order."""
    problems: tuple[str, ...]
    source: str = ""
    """Where the settings came from, for the file's comment and the log."""

    @property
    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)

    @property
    def problem(self) -> str | None:
        """All problems as the one line the pod's termination message shows."""
        return "; ".join(self.problems) or None


def resolve(
    nics: Sequence[Nic], pod: PodNetwork, wanted: Wanted, socket_interfaces: Sequence[str] = ()
) -> Resolution:
    """The lines for `nics` and the pod's addresses; NCCL_SOCKET_IFNAME names
    `socket_interfaces` when given (the claims' interfaces), else the default route's."""
    addresses = pod_addresses(pod.addresses, wanted)
    rails, problems = _choose(nics, addresses, wanted)
    indexes = sorted({r.gid_index for r in rails if r.gid_index is not None})
    lines = []
    if len(indexes) == 1:
        lines.append(f"NCCL_IB_GID_INDEX={indexes[0]}")
    elif indexes:
        problems.append(_different_indexes(rails))
    if rails:
        lines.append("NCCL_IB_HCA==" + ",".join(r.hca for r in rails))
    elif not problems:
        problems.append(_nothing_carries(nics, addresses, wanted))
    if socket_interfaces:
        lines.append("NCCL_SOCKET_IFNAME==" + ",".join(socket_interfaces))
    elif pod.default_interface:
        lines.append(f"NCCL_SOCKET_IFNAME=={pod.default_interface}")
    return Resolution(tuple(lines), tuple(problems))


def pod_addresses(addresses: Sequence[PodAddress], wanted: Wanted) -> list[PodAddress]:
    """The addresses of the wanted family that can name a rail: no loopback, no link-local."""
    return [
        a
        for a in addresses
        if a.ip.version == wanted.ip_version and not (a.ip.is_loopback or a.ip.is_link_local)
    ]


def _names_rail(gid_ip: str, wanted: Wanted) -> bool:
    ip = ipaddress.ip_address(gid_ip)
    return ip.version == wanted.ip_version and not ip.is_link_local


def _active(nics: Sequence[Nic]) -> Iterator[tuple[str, Port]]:
    for nic in nics:
        for port in nic.ports:
            if port.state == "ACTIVE":
                yield f"{nic.name}:{port.port}", port


def _choose(
    nics: Sequence[Nic], addresses: list[PodAddress], wanted: Wanted
) -> tuple[list[Rail], list[str]]:
    ips = {str(a.ip) for a in addresses}
    pod_interfaces = {a.interface for a in addresses if a.interface}
    infiniband = [(hca, p) for hca, p in _active(nics) if p.link_layer == "InfiniBand"]
    with_ipoib = {hca for hca, p in infiniband if p.netdev in pod_interfaces}
    rails, problems = [], []
    for hca, port in _active(nics):
        if port.link_layer == "Ethernet":
            rail_or_problem = _roce_rail(hca, port, ips, wanted)
            if isinstance(rail_or_problem, str):
                problems.append(rail_or_problem)
            elif rail_or_problem is not None:
                rails.append(rail_or_problem)
        elif not with_ipoib or hca in with_ipoib:
            rails.append(Rail(hca, None))
    return rails, problems


def _roce_rail(hca: str, port: Port, ips: set[str], wanted: Wanted) -> Rail | str | None:
    """The port's rail at its lowest GID index of a pod address and the wanted type; a
    problem when it holds pod addresses only as other types; None when it holds none."""
    hits = [g for g in port.gids if g.ip in ips]
    right = [g.index for g in hits if g.type == wanted.gid_type]
    if right:
        return Rail(hca, min(right))
    if not hits:
        return None
    named = ", ".join(sorted({str(g.ip) for g in hits}))
    found = ", ".join(f"{g.type} at index {g.index}" for g in hits)
    return f"{hca} has no {wanted.gid_type} GID of {named} (only {found})"


def _different_indexes(rails: list[Rail]) -> str:
    each = ", ".join(f"{r.hca} at {r.gid_index}" for r in rails if r.gid_index is not None)
    return (
        f"the ports need different GID indexes ({each}) but NCCL_IB_GID_INDEX is one value "
        "for all devices; use gid.strategy auto with NCCL >= 2.21.5 instead"
    )


def _nothing_carries(nics: Sequence[Nic], addresses: list[PodAddress], wanted: Wanted) -> str:
    named = ", ".join(f"{a.ip} on {a.interface}" if a.interface else str(a.ip) for a in addresses)
    ports = ", ".join(_describe(nic.name, port, wanted) for nic in nics for port in nic.ports)
    return (
        f"no RDMA port carries a {wanted.gid_type} GID of the pod's {wanted.family_name} "
        f"addresses ({named or 'none'}); ports seen: {ports or 'none'}"
    )


def _describe(device: str, port: Port, wanted: Wanted) -> str:
    what = f"{device}:{port.port} ({port.link_layer}, {port.state}"
    if port.link_layer != "Ethernet" or port.state != "ACTIVE":
        return what + ")"
    ips = [
        ip
        for g in port.gids
        if (ip := g.ip) and g.type == wanted.gid_type and _names_rail(ip, wanted)
    ]
    listed = ", ".join(ips[:LISTED_GIDS]) or "none"
    more = f" and {len(ips) - LISTED_GIDS} more" if len(ips) > LISTED_GIDS else ""
    return f"{what}, {wanted.gid_type} {wanted.family_name} GIDs: {listed}{more})"
