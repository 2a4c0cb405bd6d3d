"""The pods/eviction subresource, as the apiserver's eviction REST handler answers it.

An Eviction (policy/v1) deletes the pod unless a PodDisruptionBudget whose selector matches the
pod's labels allows no more disruptions: then 429 TooManyRequests, "Cannot evict pod as it would
violate the pod's disruption budget." (pkg/registry/core/pod/storage/eviction.go). The budget's
`status.disruptionsAllowed` is taken as stored (no disruption controller runs here) and counted
down by each eviction made. `dryRun=All` checks and changes nothing.

With a termination grace (`python -m testbed.fakeapi --termination SECONDS`), an evicted pod
bound to a node is not deleted at once: it gets its `deletionTimestamp` and stays, Terminating,
for that long, as while the kubelet stops its containers, and is deleted then. Schedulers count
a Terminating pod's resources as used until it is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from dataclasses import dataclass
from typing import Any

from kube_rdma.core.objects import Json
from testbed.fakeapi.errors import ApiError
from testbed.fakeapi.selectors import Selector
from testbed.fakeapi.store import Store

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


@dataclass
class Termination:
    seconds: float = 0.0
    """How long an evicted pod bound to a node stays Terminating; 0: deleted at once."""


def evict(
    store: Store,
    namespace: str,
    name: str,
    body: Json,
    dry_run: bool,
    termination: Termination | None = None,
) -> Json:
    pod = store.get("pods", name, namespace)
    if "poddisruptionbudgets" in store.resources:
        found = store.select(Selector("poddisruptionbudgets", namespace))
        budgets = [b for b in found if _covers(b, pod)]
    else:
        budgets = []
    for budget in budgets:
        if int((budget.get("status") or {}).get("disruptionsAllowed") or 0) <= 0:
            raise ApiError(429, VIOLATION, reason="TooManyRequests")
    if dry_run:
        return _success()
    for budget in budgets:
        budget["status"]["disruptionsAllowed"] -= 1
        store.update("poddisruptionbudgets", budget, namespace)
    preconditions = (body.get("deleteOptions") or {}).get("preconditions")
    grace = termination.seconds if termination is not None else 0.0
    if grace > 0 and (pod.get("spec") or {}).get("nodeName"):
        _terminate(store, pod, grace)
    else:
        store.delete("pods", name, namespace, preconditions)
    return _success()


def _terminate(store: Store, pod: Json, grace: float) -> None:
    """Mark the pod Terminating (once), and delete it `grace` seconds later."""
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):
        return
    terminating = copy.deepcopy(pod)
    terminating["metadata"]["deletionTimestamp"] = store.timestamp()
    terminating["metadata"]["deletionGracePeriodSeconds"] = max(1, round(grace))
    store.update("pods", terminating, meta["namespace"])
    preconditions = {"uid": meta["uid"]}
    asyncio.get_running_loop().call_later(grace, _gone, store, pod, preconditions)


def _gone(store: Store, pod: Json, preconditions: Json) -> None:
    with contextlib.suppress(ApiError):  # deleted meanwhile, or replaced by a new pod
        store.delete("pods", pod["metadata"]["name"], pod["metadata"]["namespace"], preconditions)


def _covers(budget: Json, pod: Json) -> bool:
    selector: Any = (budget.get("spec") or {}).get("selector") or {}
    wanted = selector.get("matchLabels") or {}
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def _success() -> Json:
    return {"kind": "Status", "apiVersion": "v1", "status": "Success"}
