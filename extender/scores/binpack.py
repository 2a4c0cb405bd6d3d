"""GPU bin-packing: prefer the node this pod fills most, so whole nodes stay free for 8-GPU
pods (the MostAllocated strategy, on GPUs)."""

from __future__ import annotations

from extender.book.reservations import GangPlans
from extender.cluster.model import NodeInfo
from extender.pairing import Rails
from extender.podview import PodView
from extender.scores import Criterion, clamp


def score(pod: PodView, node: NodeInfo, rails: Rails | None) -> float:
    total = node.allocatable.get(pod.gpu_resource, 0)
    if total <= 0:
        return 0.0
    used_after = node.requested.get(pod.gpu_resource, 0) + pod.gpus
    return clamp(10.0 * used_after / total)


def criterion(plans: GangPlans) -> Criterion:
    return Criterion(score)
