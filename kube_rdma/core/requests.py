"""A pod's effective resource requests, as kube-scheduler counts them: the sum over its
containers, or the largest init container's request when that is higher (init containers run one
at a time, before the others)."""

from __future__ import annotations

from collections.abc import Callable

from kube_rdma.core.objects import Json


def effective_requests(pod: Json, of_container: Callable[[Json], dict[str, int]]) -> dict[str, int]:
    """`of_container` gives one container's requests, counted as the caller needs them."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for name, amount in of_container(container).items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or []:
        for name, amount in of_container(container).items():
            total[name] = max(total.get(name, 0), amount)
    return total
