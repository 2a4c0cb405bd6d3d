"""The pods/eviction subresource, as the apiserver's eviction REST handler answers it.

An Eviction (policy/v1) deletes the pod unless a PodDisruptionBudget whose selector matches the
pod's labels allows no more disruptions: then 429 TooManyRequests, "Cannot evict pod as it would
violate the pod's disruption budget." (pkg/registry/core/pod/storage/eviction.go). The budget's
`status.disruptionsAllowed` is taken as stored (no disruption controller runs here) and counted
down by each eviction made. `dryRun=All` checks and changes nothing.
"""

from __future__ import annotations

from typing import Any

from kube_rdma.core.objects import Json
from testbed.fakeapi.errors import ApiError
from testbed.fakeapi.selectors import Selector
from testbed.fakeapi.store import Store

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def evict(store: Store, namespace: str, name: str, body: Json, dry_run: bool) -> Json:
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
    store.delete("pods", name, namespace, preconditions)
    return _success()


def _covers(budget: Json, pod: Json) -> bool:
    selector: Any = (budget.get("spec") or {}).get("selector") or {}
    wanted = selector.get("matchLabels") or {}
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def _success() -> Json:
    return {"kind": "Status", "apiVersion": "v1", "status": "Success"}
