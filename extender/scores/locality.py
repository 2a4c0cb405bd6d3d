"""Topology-domain locality: members of a gang close together in the network, and other pods
kept out of the room a planned gang needs.

A gang member scores 10 on the nodes its gang's plan chose and 0 elsewhere. While some gang is
planned, any other pod scores 0 on the nodes plans hold capacity on and on every node of a
domain a plan fills at its gang's own narrowest level (the NVLink domain of a gang that
requires one; the leaf of one that asks nothing), 10 elsewhere. With no plan, every node is
equally local.
"""

from __future__ import annotations

from extender.book.reservations import GangPlans
from extender.cluster.model import NodeInfo
from extender.pairing import Rails
from extender.podview import PodView
from extender.scores import Criterion

NEUTRAL = 10.0
AWAY = 0.0


def criterion(plans: GangPlans) -> Criterion:
    def score(pod: PodView, node: NodeInfo, rails: Rails | None) -> float:
        gang = plans.member_gang(pod.key)
        if gang is not None:
            nodes = plans.planned_nodes(gang)
            return NEUTRAL if nodes is None or node.name in nodes else AWAY
        if not plans.active():
            return NEUTRAL
        if node.name in plans.held_nodes or plans.fenced(node):
            return AWAY
        return NEUTRAL

    def live_for(pod: PodView) -> bool:
        gang = plans.member_gang(pod.key)
        if gang is not None:
            return plans.planned_nodes(gang) is not None
        return plans.active()

    return Criterion(score, live=plans.active, neutral=NEUTRAL, live_for=live_for)
