"""Link rate headroom: how fast the rails the pod would use are, against 400 Gb/s NDR/XDR-class
links (the fastest common today); slower or degraded links score proportionally lower.

A rail's rate here is what it can move: the port's link rate, capped by its NIC's PCIe bandwidth
(extender/pairing.py), so a 400 Gb/s NIC whose Gen5 x16 link trained down to x8 (252 Gb/s)
scores as the 252 Gb/s rail it is. The `min-rate-gbps` filter still reads the link rate."""

from __future__ import annotations

from extender.book.reservations import GangPlans
from extender.cluster.model import NodeInfo
from extender.pairing import Rails
from extender.podview import PodView
from extender.scores import Criterion, clamp

REFERENCE_GBPS = 400.0


def score(pod: PodView, node: NodeInfo, rails: Rails | None) -> float:
    if rails is None or not rails.rates:
        return 0.0
    used = rails.rates[: max(pod.rails, 1)]
    return clamp(10.0 * (sum(used) / len(used)) / REFERENCE_GBPS)


def criterion(plans: GangPlans) -> Criterion:
    return Criterion(score)
