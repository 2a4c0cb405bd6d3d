"""GPU-NIC affinity quality: the mean level of the best pairing of the pod's GPUs to NICs.

A GPU whose PCIe link trained below its maximum counts one level worse (PIX as PXB, ..., SYS
stays SYS). GPUDirect RDMA traffic between a GPU and its NIC crosses the GPU's own link, so a
halved link hurts that pairing the way a longer path does; the GPU is still usable, which is
why it lowers the score rather than failing the node. The pairing is judged on the whole
board, so a node whose other GPUs can take the pod at full speed loses nothing."""

from __future__ import annotations

from extender.book.reservations import GangPlans
from extender.cluster.model import NodeInfo
from extender.pairing import Rails, quality
from extender.podview import PodView
from extender.scores import Criterion, clamp


def score(pod: PodView, node: NodeInfo, rails: Rails | None) -> float:
    if rails is None:
        return 0.0
    return clamp(quality(rails, pod.gpus or pod.rails))


def criterion(plans: GangPlans) -> Criterion:
    return Criterion(score)
