"""GPU-NIC pairing: which of a node's GPUs can each get a NIC of their own, and how close.

For every pod the extender needs, per node: how many ports of the pod's link layer exist, how
many are usable, and the best way to give g GPUs g distinct usable NICs. With the PCIe levels as
edge weights, the GPU sides of all matchings form a transversal matroid, so taking the largest
matching using only PIX edges, then PIX or PXB, and so on, gives the best achievable profile
("6 GPUs at PIX, 2 at NODE") without searching assignments. Nodes have at most a few dozen
GPUs and NICs, so simple augmenting paths (Kuhn's algorithm) are enough.

The extender cannot see which GPUs the device plugin will hand out, so this is the best case
over the node's GPUs; with the node otherwise empty it is exact.

A PCIe link that trained below its maximum (a card in a x8 slot, a link that came up at Gen3)
silently caps what the device can move. The scores take it in without a criterion of their own:
a port's usable rate is the smaller of its link rate and its NIC's PCIe bandwidth (the `rate`
score), and a GPU whose link trained down reaches every NIC one level worse (the `affinity`
score). The filters keep the levels and rates the document states, so a requirement such as
`min-affinity: PIX` is judged on the wiring, and a degraded link costs score, not eligibility.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kube_rdma.core.topology import Level, Nic, PcieLink, Port, Topology

LEVELS = tuple(Level)
LEVEL_SCORE = {Level.PIX: 10.0, Level.PXB: 8.0, Level.PHB: 5.0, Level.NODE: 3.0, Level.SYS: 1.0}
_WORST = LEVELS[-1].rank


@dataclass(frozen=True)
class Rails:
    """A node's RDMA rails for one requirement (link layer and minimum rate)."""

    ports: int
    """Ports of the link layer, whatever their state."""
    usable: int
    """ACTIVE, healthy ports at or above the minimum rate."""
    rates: tuple[float, ...]
    """Usable rates of the usable ports, fastest first: each port's rate, capped by its NIC's
    PCIe bandwidth."""
    usable_nics: frozenset[str]
    down: tuple[str, ...]
    """NICs with ports of the link layer none of which is ACTIVE and healthy."""
    gpus: int
    matched: tuple[int, ...]
    """matched[i]: the most GPUs that can each get a distinct usable NIC at LEVELS[i] or better."""
    scored: tuple[int, ...] | None = None
    """As `matched`, with a GPU whose PCIe link trained down one level worse; None when no GPU's
    link trained down (then it is `matched`)."""

    def at(self, level: Level) -> int:
        return self.matched[level.rank]

    def scored_at(self, level: Level) -> int:
        return (self.scored or self.matched)[level.rank]


def rails(topology: Topology, link_layer: str | None, min_rate: float | None) -> Rails:
    usable_nics, down, rates, ports = set(), [], [], 0
    for nic in topology.nics:
        mine = [p for p in nic.ports if link_layer is None or p.link_layer == link_layer]
        ports += len(mine)
        up = [p for p in mine if p.state == "ACTIVE" and p.healthy]
        good = [p for p in up if min_rate is None or (p.rate_gbps or 0) >= min_rate]
        rates += [usable_rate(p, gpu_link(nic)) for p in good]
        if good:
            usable_nics.add(nic.name)
        if mine and not up:
            down.append(nic.name)
    edges = _edges(topology, usable_nics)
    matched = tuple(len(_matching(edges, level.rank)) for level in LEVELS)
    degraded = frozenset(g.index for g in topology.gpus if g.pcie is not None and g.pcie.narrowed)
    scored = None
    if degraded:
        worse = _edges(topology, usable_nics, degraded)
        scored = tuple(len(_matching(worse, level.rank)) for level in LEVELS)
    return Rails(
        ports=ports,
        usable=len(rates),
        rates=tuple(sorted(rates, reverse=True)),
        usable_nics=frozenset(usable_nics),
        down=tuple(down),
        gpus=len(topology.gpus),
        matched=matched,
        scored=scored,
    )


def pcie_gbps(link: PcieLink) -> float:
    """What a PCIe link moves per direction, in Gb/s: GT/s x lanes x the encoding's efficiency,
    8b/10b below 8 GT/s (PCIe 1 and 2) and 128b/130b from 8 GT/s up (PCIe 3 to 5; PCIe 6's
    FLIT mode is within a few percent of it). Packet headers are not counted."""
    efficiency = 128 / 130 if link.speed_gts >= 8.0 else 8 / 10
    return link.speed_gts * link.width * efficiency


def gpu_link(nic: Nic) -> PcieLink | None:
    """The PCIe link the NIC's traffic to GPU memory crosses: its Data Direct function's when
    it has one (ConnectX-8), else its own."""
    if nic.data_direct is not None and nic.data_direct.pcie is not None:
        return nic.data_direct.pcie
    return nic.pcie


def usable_rate(port: Port, link: PcieLink | None) -> float:
    """The port's link rate, capped by its NIC's PCIe bandwidth when the document has it."""
    rate = port.rate_gbps or 0.0
    return rate if link is None else min(rate, pcie_gbps(link))


def _edges(
    topology: Topology, nics: set[str], degraded: frozenset[int] = frozenset()
) -> dict[int, list[tuple[str, int]]]:
    """GPU -> its (NIC, level rank) options among `nics`, best first; a GPU in `degraded`
    reaches every NIC one level worse (SYS stays SYS)."""
    edges: dict[int, list[tuple[str, int]]] = {g.index: [] for g in topology.gpus}
    for pair in topology.pairs:
        if pair.nic in nics and pair.gpu in edges:
            rank = pair.level.rank
            if pair.gpu in degraded:
                rank = min(rank + 1, _WORST)
            edges[pair.gpu].append((pair.nic, rank))
    for options in edges.values():
        options.sort(key=lambda option: option[1])
    return edges


def _matching(edges: Mapping[int, list[tuple[str, int]]], max_rank: int) -> dict[str, int]:
    """A maximum matching NIC -> GPU using edges at `max_rank` or better."""
    owner: dict[str, int] = {}

    def augment(gpu: int, seen: set[str]) -> bool:
        for nic, rank in edges[gpu]:
            if rank > max_rank or nic in seen:
                continue
            seen.add(nic)
            if nic not in owner or augment(owner[nic], seen):
                owner[nic] = gpu
                return True
        return False

    for gpu in edges:
        augment(gpu, set())
    return owner


def quality(found: Rails, gpus: int) -> float:
    """0-10: the mean over the pod's GPUs of their best achievable NIC level (PIX 10 ... SYS 1,
    no NIC 0), a GPU whose PCIe link trained down counted one level worse."""
    if gpus <= 0:
        return 10.0
    total, placed = 0.0, 0
    for level in LEVELS:
        reach = min(gpus, found.scored_at(level))
        total += (reach - placed) * LEVEL_SCORE[level]
        placed = reach
    return total / gpus


def profile(found: Rails, gpus: int) -> dict[str, int]:
    """How many of the pod's GPUs get a NIC at each level, e.g. {"PIX": 7, "NODE": 1}."""
    result, placed = {}, 0
    for level in LEVELS:
        reach = min(gpus, found.at(level))
        if reach > placed:
            result[level.value] = reach - placed
        placed = reach
    return result


def chosen_nics(topology: Topology, usable: Iterable[str], gpus: int) -> list[str]:
    """NICs for `gpus` GPUs at the best bottleneck level, in GPU order: the list the bind
    writes for NCCL_IB_HCA."""
    edges = _edges(topology, set(usable))
    for level in LEVELS:
        owner = _matching(edges, level.rank)
        if len(owner) >= gpus:
            by_gpu = sorted(owner.items(), key=lambda item: item[1])
            return [nic for nic, _ in by_gpu[:gpus]]
    by_gpu = sorted(_matching(edges, LEVELS[-1].rank).items(), key=lambda item: item[1])
    return [nic for nic, _ in by_gpu]
