"""Scores: one module per criterion, each `score(pod, node, rails) -> float` in 0..10.

The weighted mean of the criteria (weights from the admin's file, extender/weights.py) is the
node's score; kube-scheduler multiplies it by the extender's weight.
"""

from __future__ import annotations

from collections.abc import Callable

from extender.cluster.model import NodeInfo
from extender.pairing import Rails
from extender.podview import PodView

Scorer = Callable[[PodView, NodeInfo, "Rails | None"], float]


def registry() -> dict[str, Scorer]:
    from extender.scores import affinity, binpack, locality, rate

    return {
        "affinity": affinity.score,
        "rate": rate.score,
        "binpack": binpack.score,
        "locality": locality.score,
    }


def clamp(value: float) -> float:
    return max(0.0, min(10.0, value))
