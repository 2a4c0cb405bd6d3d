"""GPU-NIC affinity quality: the mean level of the best pairing of the pod's GPUs to NICs."""

from __future__ import annotations

from extender.cluster.model import NodeInfo
from extender.gangs.reservations import GangPlans
from extender.pairing import Rails, quality
from extender.podview import PodView
from extender.scores import Criterion, clamp


def score(pod: PodView, node: NodeInfo, rails: Rails | None) -> float:
    if rails is None:
        return 0.0
    return clamp(quality(rails, pod.gpus or pod.rails))


def criterion(plans: GangPlans) -> Criterion:
    return Criterion(score)
