"""GPU-NIC affinity: can each of the pod's GPUs get its own usable NIC at the level it needs
(`kube-rdma.io/min-affinity`)? Without the annotation affinity is only scored."""

from __future__ import annotations

from extender.cluster.model import NodeInfo
from extender.filters.verdict import PASS, Verdict, never
from extender.pairing import Rails
from extender.podview import PodView


def check(pod: PodView, node: NodeInfo, rails: Rails | None) -> Verdict:
    if pod.min_affinity is None or pod.gpus <= 0 or rails is None:
        return PASS
    reach = rails.at(pod.min_affinity)
    if reach >= pod.gpus:
        return PASS
    down = f"rail {', '.join(rails.down)} down: " if rails.down else ""
    level = pod.min_affinity.value
    return never(
        f"{down}{reach} of {rails.gpus} GPUs have a {level} NIC of their own, pod needs {pod.gpus}"
    )
