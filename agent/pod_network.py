"""The pod's own addresses and default-route interface, as its network namespace's /proc shows them.

`kube-rdma nccl-conf` runs inside the pod, in an image without iproute2, so it reads the kernel's
text views of the namespace it runs in (all from `<proc-root>/net/`):
- `fib_trie`: every IPv4 address of the namespace is a leaf followed by a `/32 host LOCAL` line
  (listed once under `Main:` and again under `Local:`). The trie names no interface, so an
  address is given the interface of the most specific route in `route` that covers it: the
  kernel adds a subnet route for every address shorter than /32, and a /32 address (Calico's)
  falls to the default route's interface.
- `route`: the IPv4 main table; addresses and masks are the kernel's raw `__be32` printed with
  `%08X`, so they read in host byte order.
- `if_inet6`: one IPv6 address per line with its interface (address, ifindex, prefix length,
  scope, flags, name).
- `ipv6_route`: the IPv6 table (destination, prefix length, source, prefix length, next hop,
  metric, refcnt, use, flags, interface).
A file that does not exist (IPv6 disabled, say) shows nothing; one that cannot be read or parsed
raises `ProcError` naming it.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Family = Literal["ipv4", "ipv6"]
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

LOOPBACK = "lo"
RTF_UP = 0x0001
RTF_REJECT = 0x0200
_ROUTE_FIELDS = 11
_IPV6_ROUTE_FIELDS = 10
_IF_INET6_FIELDS = 6


class ProcError(Exception):
    """A /proc file cannot be read or does not have the kernel's format; the message names it."""


@dataclass(frozen=True)
class PodAddress:
    ip: IpAddress
    interface: str | None
    """None when the address was given on the command line rather than read from the kernel."""


@dataclass(frozen=True)
class PodNetwork:
    addresses: tuple[PodAddress, ...]
    default_interface: str | None


@dataclass(frozen=True)
class _Route:
    interface: str
    network: ipaddress.IPv4Network
    metric: int
    flags: int


def read_pod_network(
    proc_root: Path, family: Family, given: tuple[IpAddress, ...] | None = None
) -> PodNetwork:
    """The namespace's addresses of `family` (or the `given` ones) and its default interface."""
    routes = parse_route(proc_root / "net" / "route")
    if given is not None:
        addresses = tuple(PodAddress(ip, None) for ip in given)
    elif family == "ipv4":
        addresses = ipv4_addresses(parse_fib_trie(proc_root / "net" / "fib_trie"), routes)
    else:
        addresses = parse_if_inet6(proc_root / "net" / "if_inet6")
    ipv4_default = default_interface(routes)
    ipv6_default = parse_ipv6_default(proc_root / "net" / "ipv6_route")
    preferred = (ipv4_default, ipv6_default) if family == "ipv4" else (ipv6_default, ipv4_default)
    return PodNetwork(addresses, preferred[0] or preferred[1])


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "not text"
        raise ProcError(f"{path}: cannot read: {reason}") from e


def _garbled(path: Path, number: int, line: str) -> ProcError:
    return ProcError(f"{path}: line {number}: not in the kernel's format: {line.strip()!r}")


def parse_fib_trie(path: Path) -> list[ipaddress.IPv4Address]:
    """The namespace's local IPv4 addresses, in trie order, each once."""
    found: dict[ipaddress.IPv4Address, None] = {}
    leaf: ipaddress.IPv4Address | None = None
    for number, line in enumerate(_lines(path), 1):
        text = line.strip()
        if text.startswith("|--"):
            try:
                leaf = ipaddress.IPv4Address(text[3:].strip())
            except ValueError:
                raise _garbled(path, number, line) from None
        elif text.split() == ["/32", "host", "LOCAL"] and leaf is not None:
            found[leaf] = None
    return list(found)


def _be32(field: str) -> str:
    return socket.inet_ntoa(struct.pack("=I", int(field, 16)))


def parse_route(path: Path) -> list[_Route]:
    routes = []
    for number, line in enumerate(_lines(path)[1:], 2):
        fields = line.split()
        if not fields:
            continue
        try:
            if len(fields) != _ROUTE_FIELDS:
                raise ValueError
            network = ipaddress.IPv4Network(f"{_be32(fields[1])}/{_be32(fields[7])}")
            routes.append(_Route(fields[0], network, int(fields[6]), int(fields[3], 16)))
        except ValueError:
            raise _garbled(path, number, line) from None
    return routes


def ipv4_addresses(
    local: list[ipaddress.IPv4Address], routes: list[_Route]
) -> tuple[PodAddress, ...]:
    """Local addresses other than loopback, each with the interface its best route names."""
    result = []
    for ip in local:
        if ip.is_loopback:
            continue
        covering = [r for r in routes if ip in r.network and r.flags & RTF_UP]
        best = max(covering, key=lambda r: r.network.prefixlen, default=None)
        result.append(PodAddress(ip, best.interface if best else None))
    return tuple(result)


def default_interface(routes: list[_Route]) -> str | None:
    defaults = [
        r
        for r in routes
        if r.network.prefixlen == 0 and r.flags & RTF_UP and r.interface != LOOPBACK
    ]
    return min(defaults, key=lambda r: r.metric).interface if defaults else None


def parse_if_inet6(path: Path) -> tuple[PodAddress, ...]:
    """Global IPv6 addresses (no loopback, no link-local), each with its interface."""
    result = []
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            if len(fields) != _IF_INET6_FIELDS:
                raise ValueError
            ip = ipaddress.IPv6Address(int(fields[0], 16))
        except ValueError:
            raise _garbled(path, number, line) from None
        if fields[5] != LOOPBACK and not (ip.is_loopback or ip.is_link_local):
            result.append(PodAddress(ip, fields[5]))
    return tuple(result)


def parse_ipv6_default(path: Path) -> str | None:
    """The interface of the lowest-metric usable IPv6 default route (the kernel lists an
    unreachable default on `lo` with RTF_REJECT)."""
    best: tuple[int, str] | None = None
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            if len(fields) != _IPV6_ROUTE_FIELDS:
                raise ValueError
            destination, prefix = int(fields[0], 16), int(fields[1], 16)
            metric, flags = int(fields[5], 16), int(fields[8], 16)
        except ValueError:
            raise _garbled(path, number, line) from None
        usable = flags & RTF_UP and not flags & RTF_REJECT and fields[9] != LOOPBACK
        if destination == 0 and prefix == 0 and usable and (best is None or metric < best[0]):
            best = (metric, fields[9])
    return best[1] if best else None
