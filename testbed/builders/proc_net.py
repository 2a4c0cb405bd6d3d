"""Write a network namespace's `/proc/net` views (fib_trie, route, if_inet6, ipv6_route) as the
kernel prints them, for a pod described by its interfaces and default routes.

The formats follow the kernel's printers: `fib_trie_seq_show` (net/ipv4/fib_trie.c: `Main:` and
`Local:` tables, `+--` nodes, `|--` leaves with `/len scope TYPE` lines), `fib_route_seq_show`
(addresses as the raw `__be32` with `%08X`, lines padded to 127 characters), `if6_seq_show` and
`rt6_info_route` (net/ipv6/addrconf.c and route.c). Loopback (`lo`, 127.0.0.1/8, ::1) is always
there, as in every namespace.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path

RTF_UP, RTF_GATEWAY, RTF_HOST = 0x1, 0x2, 0x4
ROUTE_HEADER = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"
SCOPES = {"global": 0x00, "host": 0x10, "link": 0x20}


@dataclass
class Interface:
    name: str
    addresses: list[str] = field(default_factory=list)
    """CIDRs, IPv4 or IPv6 (`10.244.1.7/32`, `fd00:10::21/64`)."""


@dataclass
class Namespace:
    interfaces: list[Interface]
    default_via: tuple[str, str] | None = None
    """(interface, IPv4 gateway) of the default route."""
    default6_via: tuple[str, str] | None = None


def write_proc(root: Path, namespace: Namespace) -> Path:
    """`<root>/net/{fib_trie,route,if_inet6,ipv6_route}`; returns `root` for `--proc-root`."""
    interfaces = [Interface("lo", ["127.0.0.1/8", "::1/128"]), *namespace.interfaces]
    (root / "net").mkdir(parents=True, exist_ok=True)
    v4 = [
        (i.name, address)
        for i in interfaces
        for a in i.addresses
        if isinstance(address := ipaddress.ip_interface(a), ipaddress.IPv4Interface)
    ]
    (root / "net" / "fib_trie").write_text(_fib_trie(v4, namespace.default_via is not None))
    (root / "net" / "route").write_text(_route(v4, namespace.default_via))
    (root / "net" / "if_inet6").write_text(_if_inet6(interfaces))
    (root / "net" / "ipv6_route").write_text(_ipv6_route(interfaces, namespace.default6_via))
    return root


def _fib_trie(addresses: list[tuple[str, ipaddress.IPv4Interface]], default: bool) -> str:
    lines = ["  +-- 0.0.0.0/0 3 0 5"]
    if default:
        lines += ["     |-- 0.0.0.0", "        /0 universe UNICAST"]
    for address in sorted(a for _, a in addresses):
        network = address.network
        if network.prefixlen == 32:
            lines += [f"     |-- {address.ip}", "        /32 host LOCAL"]
            continue
        lines += [f"     +-- {network} 2 0 2", f"        |-- {network.network_address}"]
        kind = "host LOCAL" if address.is_loopback else "link UNICAST"
        lines += [f"           /{network.prefixlen} {kind}"]
        lines += [f"        |-- {address.ip}", "           /32 host LOCAL"]
        lines += [f"        |-- {network.broadcast_address}", "           /32 link BROADCAST"]
    trie = "\n".join(lines) + "\n"
    return f"Main:\n{trie}Local:\n{trie}"


def _be32(ip: str) -> int:
    value: int = struct.unpack("=I", socket.inet_aton(ip))[0]
    return value


def _route_line(name: str, dest: str, gateway: str, flags: int, mask: str) -> str:
    line = f"{name}\t{_be32(dest):08X}\t{_be32(gateway):08X}\t{flags:04X}\t0\t0\t0\t"
    return f"{line}{_be32(mask):08X}\t0\t0\t0".ljust(127)


def _route(
    addresses: list[tuple[str, ipaddress.IPv4Interface]], default_via: tuple[str, str] | None
) -> str:
    lines = [ROUTE_HEADER.ljust(127)]
    if default_via:
        name, gateway = default_via
        lines.append(_route_line(name, "0.0.0.0", gateway, RTF_UP | RTF_GATEWAY, "0.0.0.0"))
        lines.append(_route_line(name, gateway, "0.0.0.0", RTF_UP | RTF_HOST, "255.255.255.255"))
    for name, address in addresses:
        network = address.network
        if name != "lo" and network.prefixlen < 32:
            dest, mask = str(network.network_address), str(network.netmask)
            lines.append(_route_line(name, dest, "0.0.0.0", RTF_UP, mask))
    return "\n".join(lines) + "\n"


def _hex6(ip: ipaddress.IPv6Address | str) -> str:
    return ipaddress.IPv6Address(ip).packed.hex()


def _if_inet6(interfaces: list[Interface]) -> str:
    lines = []
    for ifindex, interface in enumerate(interfaces, 1):
        for text in interface.addresses:
            address = ipaddress.ip_interface(text)
            if address.version != 6:
                continue
            scope = SCOPES["host" if address.is_loopback else "global"]
            prefix = address.network.prefixlen
            lines.append(
                f"{_hex6(address.ip)} {ifindex:02x} {prefix:02x} {scope:02x} 80 {interface.name:>8}"
            )
        if interface.name != "lo":
            link_local = f"fe80::ac0:ebff:fe00:{ifindex:x}"
            lines.append(f"{_hex6(link_local)} {ifindex:02x} 40 20 80 {interface.name:>8}")
    return "\n".join(lines) + "\n"


def _ipv6_line(dest: str, prefix: int, hop: str, metric: int, flags: int, name: str) -> str:
    zero = _hex6("::")
    return (
        f"{_hex6(dest)} {prefix:02x} {zero} 00 {_hex6(hop)} {metric:08x} "
        f"00000001 00000000 {flags:08x} {name:>8}"
    )


def _ipv6_route(interfaces: list[Interface], default_via: tuple[str, str] | None) -> str:
    lines = []
    for interface in interfaces:
        for text in interface.addresses:
            address = ipaddress.ip_interface(text)
            if address.version == 6 and interface.name != "lo":
                network = address.network
                lines.append(
                    _ipv6_line(
                        str(network.network_address),
                        network.prefixlen,
                        "::",
                        256,
                        1,
                        interface.name,
                    )
                )
    if default_via:
        name, gateway = default_via
        lines.append(_ipv6_line("::", 0, gateway, 1024, RTF_UP | RTF_GATEWAY, name))
    lines.append(_ipv6_line("::1", 128, "::", 0, 0x80200001, "lo"))
    lines.append(_ipv6_line("::", 0, "::", 0xFFFFFFFF, 0x00200200, "lo"))
    return "\n".join(lines) + "\n"
