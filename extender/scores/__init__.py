"""Scores: one module per criterion, each `score(pod, node, rails) -> float` in 0..10.

The criteria are the fields of the admin's weights (extender/weights.py); each has the module of
the same name here, and `criterion(plans)` in it builds it with the read-only view of the gang
plans. The weighted mean of the criteria is the node's score; kube-scheduler multiplies it by the
extender's weight.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

from extender.book.reservations import GangPlans
from extender.cluster.model import NodeInfo
from extender.pairing import Rails
from extender.podview import PodView
from extender.weights import CRITERIA

Scorer = Callable[[PodView, NodeInfo, "Rails | None"], float]


@dataclass(frozen=True)
class Criterion:
    score: Scorer
    live: Callable[[], bool] | None = None
    """Set for a criterion that reads the gang plans, not only the pod's shape and the node's
    state: whether its score can differ from `neutral` right now. The engine caches every
    other criterion per (shape, state), and this one's `neutral` score with them. A live
    criterion is scored per node and call, so it is given no rails (None) to keep that cheap."""
    neutral: float = 10.0
    live_for: Callable[[PodView], bool] | None = None
    """For a live criterion: whether its score can differ from `neutral` for this pod right
    now (None: whenever `live` says so). A gang's member before its gang is planned scores
    neutral everywhere; the planner scores every feasible node for it."""


def registry(plans: GangPlans) -> dict[str, Criterion]:
    """Every criterion, in the weights' order."""
    return {name: import_module(f"extender.scores.{name}").criterion(plans) for name in CRITERIA}


def clamp(value: float) -> float:
    return max(0.0, min(10.0, value))
