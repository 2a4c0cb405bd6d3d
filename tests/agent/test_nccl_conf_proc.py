"""The pod's addresses and default interface from /proc/net, as captured in a real container."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from agent.pod_network import Family, PodAddress, PodNetwork, ProcError, read_pod_network
from testbed.builders.proc_net import Interface, Namespace, write_proc

# Captured in a container with one veth (eth0: 192.0.2.2/24, fd00::2/64, default routes on eth0).
FIB_TRIE = """\
Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
"""
ROUTE = (
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"
    + " " * 55
    + "\n"
    + "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0"
    + " " * 79
    + "\n"
    + "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0"
    + " " * 79
    + "\n"
)
IF_INET6 = """\
00000000000000000000000000000001 01 80 10 80       lo
fd000000000000000000000000000002 04 40 00 82     eth0
fe8000000000000000fc00fffe000001 04 40 20 80     eth0
"""
ZERO = "00000000000000000000000000000000"
IPV6_ROUTE = f"""\
fd000000000000000000000000000000 40 {ZERO} 00 {ZERO} 00000100 00000001 00000000 00000001     eth0
fe800000000000000000000000000000 40 {ZERO} 00 {ZERO} 00000100 00000002 00000000 00000001     eth0
{ZERO} 00 {ZERO} 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0
00000000000000000000000000000001 80 {ZERO} 00 {ZERO} 00000000 00000002 00000000 80200001       lo
fd000000000000000000000000000002 80 {ZERO} 00 {ZERO} 00000000 00000003 00000000 80200001     eth0
fe8000000000000000fc00fffe000001 80 {ZERO} 00 {ZERO} 00000000 00000002 00000000 80200001     eth0
ff000000000000000000000000000000 08 {ZERO} 00 {ZERO} 00000100 00000003 00000000 00000001     eth0
{ZERO} 00 {ZERO} 00 {ZERO} ffffffff 00000001 00000000 00200200       lo
"""


def captured(root: Path) -> Path:
    (root / "net").mkdir(parents=True)
    files = {"fib_trie": FIB_TRIE, "route": ROUTE, "if_inet6": IF_INET6, "ipv6_route": IPV6_ROUTE}
    for name, text in files.items():
        (root / "net" / name).write_text(text)
    return root


def ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


@pytest.mark.parametrize(
    ("family", "expected"),
    [
        ("ipv4", PodNetwork((PodAddress(ip("192.0.2.2"), "eth0"),), "eth0")),
        ("ipv6", PodNetwork((PodAddress(ip("fd00::2"), "eth0"),), "eth0")),
    ],
)
def test_reads_a_real_capture(tmp_path: Path, family: Family, expected: PodNetwork) -> None:
    assert read_pod_network(captured(tmp_path), family) == expected


def test_each_address_gets_its_most_specific_routes_interface(tmp_path: Path) -> None:
    namespace = Namespace(
        [
            Interface("eth0", ["10.244.1.7/32"]),
            Interface("net1", ["192.168.1.21/24"]),
            Interface("ib0", ["10.10.0.5/16"]),
        ],
        default_via=("eth0", "169.254.1.1"),
    )
    assert read_pod_network(write_proc(tmp_path, namespace), "ipv4") == PodNetwork(
        (
            PodAddress(ip("10.10.0.5"), "ib0"),
            PodAddress(ip("10.244.1.7"), "eth0"),
            PodAddress(ip("192.168.1.21"), "net1"),
        ),
        "eth0",
    )


def test_ipv6_pod_falls_back_to_the_ipv4_default_route(tmp_path: Path) -> None:
    namespace = Namespace(
        [Interface("net1", ["fd00:10::21/64", "192.168.1.21/24"])],
        default_via=("net1", "192.168.1.1"),
    )
    assert read_pod_network(write_proc(tmp_path, namespace), "ipv6") == PodNetwork(
        (PodAddress(ip("fd00:10::21"), "net1"),), "net1"
    )


def test_given_addresses_and_missing_files(tmp_path: Path) -> None:
    given = (ip("192.168.4.10"),)
    assert read_pod_network(tmp_path, "ipv4", given) == PodNetwork(
        (PodAddress(ip("192.168.4.10"), None),), None
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "route",
            ROUTE.splitlines()[0] + "\neth0\t00000000\t010200C0\n",
            "line 2: not in the kernel's format: 'eth0\\t00000000\\t010200C0'",
        ),
        (
            "fib_trie",
            "Main:\n  |-- 192.0.2.300\n",
            "line 2: not in the kernel's format: '|-- 192.0.2.300'",
        ),
        ("ipv6_route", f"{ZERO} zz\n", f"line 1: not in the kernel's format: '{ZERO} zz'"),
        (
            "if_inet6",
            "fd00 04 40 00 82 eth0 extra\n",
            "line 1: not in the kernel's format: 'fd00 04 40 00 82 eth0 extra'",
        ),
    ],
)
def test_garbled_files_are_named(tmp_path: Path, name: str, text: str, message: str) -> None:
    root = captured(tmp_path)
    (root / "net" / name).write_text(text)
    with pytest.raises(ProcError) as error:
        read_pod_network(root, "ipv6" if name == "if_inet6" else "ipv4")
    assert str(error.value) == f"{root}/net/{name}: {message}"
