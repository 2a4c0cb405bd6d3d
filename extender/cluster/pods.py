"""What the cluster model reads off a pod: its key, the whole-unit resources it requests as
kube-scheduler counts them, whether kube-scheduler is preempting it, and how a bind leaves it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import QuantityError, parse_quantity
from kube_rdma.core.requests import effective_requests

PodKey = tuple[str, str]  # (namespace, name)
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def pod_key(pod: Json) -> PodKey:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))


def extended_resources(amounts: Mapping[str, Any] | None) -> dict[str, int]:
    """The whole-unit resources (`vendor/name`: GPUs, RDMA units) of a resource list."""
    result = {}
    for name, amount in (amounts or {}).items():
        if "/" not in name:
            continue
        try:
            result[name] = int(parse_quantity(amount))
        except QuantityError:
            continue
    return result


def pod_requests(pod: Json) -> dict[str, int]:
    """The pod's effective extended-resource requests, as the scheduler counts them: the sum over
    its containers, or the largest init container's when that is higher."""
    return effective_requests(pod, _container_requests)


def _container_requests(container: Json) -> dict[str, int]:
    resources = container.get("resources") or {}
    # Extended resources cannot be overcommitted: a limit alone sets the request.
    return {
        **extended_resources(resources.get("limits")),
        **extended_resources(resources.get("requests")),
    }


def preempted_by_scheduler(pod: Json) -> bool:
    """The DisruptionTarget condition kube-scheduler sets on a victim before deleting it
    (pkg/scheduler/framework/preemption, prepareCandidate; reason PreemptionByScheduler)."""
    return any(
        c.get("type") == "DisruptionTarget"
        and c.get("status") == "True"
        and c.get("reason") == "PreemptionByScheduler"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def as_bound(pod: Json, node: str, annotations: Mapping[str, str]) -> Json:
    """A copy of `pod` as a bind to `node` that writes `annotations` leaves it."""
    bound = dict(pod)
    bound["metadata"] = metadata = dict(pod.get("metadata") or {})
    if annotations:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    bound["spec"] = {**(pod.get("spec") or {}), "nodeName": node}
    return bound
