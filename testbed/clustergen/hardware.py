"""Each node's hardware and place in the network: `Board`s, and the topology document the agent
would publish for one (GPUs, NICs with their GIDs, ports and error counters, GPU-NIC levels)."""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Sequence
from dataclasses import dataclass

from agent.sysfs import ERROR_COUNTERS
from kube_rdma.core.topology import Gid, Gpu, Level, LinkLayer, Nic, Pair, Port, Topology
from testbed.clustergen.spec import ClusterSpec, spine_count

FOUR_GPU_FRACTION = 0.03
IB_SPINE_FRACTION = 0.25
RATE_GBPS = 400.0

# Root-complex buses of an HGX H100 board, two sockets of four; under each, one PCIe switch with
# a ConnectX-7 at bus+3 and a GPU at bus+4 (the layout of testbed/builders/sysfs_tree.py).
HGX_ROOTS = (0x15, 0x37, 0x48, 0x59, 0x97, 0xB7, 0xC8, 0xD9)
BOARD_SLOTS = {8: (0, 1, 2, 3, 4, 5, 6, 7), 4: (0, 1, 4, 5)}


@dataclass(frozen=True)
class Board:
    """One node's hardware and where it sits."""

    index: int
    gpus: int
    link_layer: LinkLayer
    leaf: int
    spine: int
    down_rail: int | None = None
    flaky_rail: int | None = None
    agent: bool = True
    wide: bool = False
    """The wide address plan (`ClusterSpec.wide_addresses`)."""

    @property
    def name(self) -> str:
        return f"gpu-{self.index:05d}"

    @property
    def host_ip(self) -> str:
        n = self.index + 1
        return f"172.{16 + (n >> 16)}.{n >> 8 & 255}.{n & 255}"


def pod_subnet(board: Board) -> tuple[str, int]:
    """The node's pod CIDR, and how many addresses it holds."""
    if board.wide:  # a /26 per node in 10.128.0.0/9
        base = (10 << 24) | (128 << 16) | (board.index << 6)
        return f"{ipaddress.IPv4Address(base)}/26", 64
    return f"10.{128 + (board.index >> 8)}.{board.index & 255}.0/24", 256


def pod_address(board: Board, host: int) -> str:
    """Address `host` of the node's /26 in the wide plan."""
    return str(ipaddress.IPv4Address((10 << 24) | (128 << 16) | (board.index << 6) | host))


def pod_ip(board: Board, rng: random.Random) -> str:
    """An address of the node's pod CIDR (one draw of `rng`)."""
    if board.wide:
        return pod_address(board, rng.randrange(2, 62))
    return f"10.{128 + (board.index >> 8)}.{board.index & 255}.{rng.randrange(2, 254)}"


def boards(spec: ClusterSpec, rng: random.Random) -> list[Board]:
    """The cluster's boards in rack order, with the spec's faults on exactly chosen nodes."""
    n = spec.nodes
    ib_spines = _ib_spines(spec, rng)
    four_gpu = set(rng.sample(range(n), round(FOUR_GPU_FRACTION * n)))
    counts = [round(f * n) for f in (spec.rail_down_fraction, spec.flaky_fraction)]
    picked = rng.sample(range(n), counts[0] + counts[1] + round(spec.no_agent_fraction * n))
    down, flaky = set(picked[: counts[0]]), set(picked[counts[0] : sum(counts)])
    no_agent = set(picked[sum(counts) :])
    made = []
    for i in range(n):
        leaf = i // spec.nodes_per_leaf
        spine = leaf // spec.leaves_per_spine
        gpus = 4 if i in four_gpu else 8
        made.append(
            Board(
                index=i,
                gpus=gpus,
                link_layer="InfiniBand" if spine in ib_spines else "Ethernet",
                leaf=leaf,
                spine=spine,
                down_rail=rng.randrange(gpus) if i in down else None,
                flaky_rail=rng.randrange(gpus) if i in flaky else None,
                agent=i not in no_agent,
                wide=spec.wide_addresses,
            )
        )
    return made


def _ib_spines(spec: ClusterSpec, rng: random.Random) -> set[int]:
    spines = spine_count(spec)
    if spec.link_layer == "Ethernet":
        return set()
    if spec.link_layer == "InfiniBand":
        return set(range(spines))
    count = min(spines - 1, max(1, round(IB_SPINE_FRACTION * spines)))
    return set(rng.sample(range(spines), count))


def _gpus(slots: Sequence[int]) -> tuple[Gpu, ...]:
    return tuple(
        Gpu(index=i, pci=f"0000:{HGX_ROOTS[s] + 4:02x}:00.0", numa=s // 4)
        for i, s in enumerate(slots)
    )


def _pairs(slots: Sequence[int]) -> tuple[Pair, ...]:
    """GPU i shares a PCIe switch with NIC i; the other NICs of its socket are a host bridge
    away (NODE), those of the other socket across the SMP link (SYS)."""
    return tuple(
        Pair(gpu=g, nic=f"mlx5_{r}", level=_level(gs, rs))
        for g, gs in enumerate(slots)
        for r, rs in enumerate(slots)
    )


def _level(gpu_slot: int, nic_slot: int) -> Level:
    if gpu_slot == nic_slot:
        return Level.PIX
    return Level.NODE if gpu_slot // 4 == nic_slot // 4 else Level.SYS


_GPUS = {count: _gpus(slots) for count, slots in BOARD_SLOTS.items()}
_PAIRS = {count: _pairs(slots) for count, slots in BOARD_SLOTS.items()}


def board_topology(board: Board, rng: random.Random) -> Topology:
    nics = tuple(_nic(board, rail, slot, rng) for rail, slot in enumerate(BOARD_SLOTS[board.gpus]))
    return Topology(gpus=_GPUS[board.gpus], nics=nics, pairs=_PAIRS[board.gpus], source="sysfs")


def _nic(board: Board, rail: int, slot: int, rng: random.Random) -> Nic:
    bus = HGX_ROOTS[slot] + 3
    ethernet = board.link_layer == "Ethernet"
    netdev = f"enp{bus}s0np0" if ethernet else f"ibp{bus}s0"
    # Per-NIC MAC/GUID tail: unique across the cluster, Mellanox OUI 08:c0:eb / a0:88:c2.
    tail = 0x100000 + board.index * 8 + rail
    gids = _roce_gids(board, rail, netdev, tail) if ethernet else _ib_gids(tail)
    counters = dict.fromkeys(ERROR_COUNTERS, 0)
    counters["link_downed"] = rng.choice((0, 0, 0, 1, 2))
    state, phys, rate, healthy = "ACTIVE", "LinkUp", RATE_GBPS, True
    if rail == board.down_rail:
        state, healthy = "DOWN", False
        phys, rate = ("Disabled", 40.0) if ethernet else ("Polling", 10.0)
        counters["link_downed"] += rng.randint(1, 5)
    elif rail == board.flaky_rail:
        healthy = False
        counters.update(
            symbol_error=rng.randint(1_000, 50_000),
            link_error_recovery=rng.randint(1, 20),
            port_rcv_errors=rng.randint(10, 500),
        )
    port = Port(
        port=1,
        state=state,
        phys_state=phys,
        link_layer=board.link_layer,
        rate_gbps=rate,
        netdev=netdev,
        healthy=healthy,
        gids=gids,
        counters=counters,
    )
    return Nic(name=f"mlx5_{rail}", pci=f"0000:{bus:02x}:00.0", numa=slot // 4, ports=(port,))


def _roce_gids(board: Board, rail: int, netdev: str, tail: int) -> tuple[Gid, ...]:
    """Link-local (from the MAC, EUI-64) v1/v2 at 0/1, the rail's IPv4 v1/v2 at 2/3."""
    local = str(ipaddress.IPv6Address((0xFE80 << 112) | (0x0AC0EBFFFE << 24) | tail))
    block = board.index // 250
    if board.wide:  # a /14 per rail: 10.(4(rail + 1) + block / 256).(block % 256).host
        ip = f"10.{4 * (rail + 1) + (block >> 8)}.{block & 255}.{board.index % 250 + 1}"
    else:
        ip = f"10.{rail + 1}.{block}.{board.index % 250 + 1}"
    mapped = f"::ffff:{ip}"
    return (
        Gid(index=0, gid=local, type="RoCE v1", ip=local, netdev=netdev),
        Gid(index=1, gid=local, type="RoCE v2", ip=local, netdev=netdev),
        Gid(index=2, gid=mapped, type="RoCE v1", ip=ip, netdev=netdev),
        Gid(index=3, gid=mapped, type="RoCE v2", ip=ip, netdev=netdev),
    )


def _ib_gids(tail: int) -> tuple[Gid, ...]:
    """The default-subnet-prefix GID of the port GUID."""
    gid = str(ipaddress.IPv6Address((0xFE80 << 112) | (0xA088C20300 << 24) | tail))
    return (Gid(index=0, gid=gid, type="IB"),)
