"""A Pod as the scheduler counts it: its key, the node it holds resources on, what it requests.

The request arithmetic is NodeResourcesFit's (pkg/scheduler/framework/plugins/noderesources):
the containers' sum, or an init container's amount when that is larger; cpu in millicores, every
other resource in whole units, rounded up.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING
from typing import Any

from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import QuantityError, parse_quantity
from kube_rdma.core.requests import effective_requests

PodKey = tuple[str, str]
"""(namespace, name)"""

GPU = "nvidia.com/gpu"
RDMA = "rdma/hca"
DEFAULT_SCHEDULER = "default-scheduler"
TERMINAL = frozenset({"Succeeded", "Failed"})


def pod_key(pod: Json) -> PodKey:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))


def bound_node(pod: Json) -> str | None:
    """The node the pod is bound to and holds resources on (finished pods hold none)."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("status") or {}).get("phase") in TERMINAL:
        return None
    return str(node)


def quantity(resource: str, value: Any) -> int | None:
    """A quantity in the unit the scheduler counts it in (millicores for cpu, else whole units,
    rounded up); None when it is not a quantity."""
    try:
        amount = parse_quantity(value)
    except (QuantityError, TypeError):
        return None
    if resource == "cpu":
        amount *= 1000
    return int(amount.to_integral_value(rounding=ROUND_CEILING))


def amounts(resources: Mapping[str, Any] | None) -> dict[str, int]:
    """The non-zero quantities of a resource map (requests, limits, allocatable)."""
    result = {}
    for name, value in (resources or {}).items():
        amount = quantity(name, value)
        if amount:
            result[name] = amount
    return result


def pod_requests(pod: Json) -> dict[str, int]:
    """What the pod requests, as NodeResourcesFit counts it. A missing request is its limit
    (the apiserver's defaulting, which a test apiserver may not do)."""
    return effective_requests(pod, _container_requests)


def _container_requests(container: Json) -> dict[str, int]:
    resources = container.get("resources") or {}
    return amounts({**(resources.get("limits") or {}), **(resources.get("requests") or {})})
