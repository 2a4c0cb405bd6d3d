"""Topology-domain locality: the slot gang placement fills (members of a gang close together in
the network). Until gangs are planned every node is equally local."""

from __future__ import annotations

from extender.cluster.model import NodeInfo
from extender.pairing import Rails
from extender.podview import PodView

NEUTRAL = 10.0


def score(pod: PodView, node: NodeInfo, rails: Rails | None) -> float:
    return NEUTRAL
