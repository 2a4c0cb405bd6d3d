"""The simulated apiserver's eviction, budgets and ConfigMaps, against the apiserver's rules
(kubernetes pkg/registry/core/pod/storage/eviction.go, pkg/controller/disruption)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from extender.book.records import PlanRecord
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import NotFound, ServerError, TooManyRequests
from kubesim.simulate.holds import HoldRecorder, StoreRecords
from kubesim.simulate.store import MemoryApiserver

NODE: Json = {"metadata": {"name": "n1"}}
BUDGET: Json = {
    "metadata": {"name": "db", "namespace": "team"},
    "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 1},
}


def pod(name: str, bound: bool = True, labels: dict[str, str] | None = None) -> Json:
    return {
        "metadata": {"name": name, "namespace": "team", "labels": labels or {"app": "db"}},
        "spec": {"nodeName": "n1"} if bound else {},
        "status": {"phase": "Running" if bound else "Pending"},
    }


def store(*pods: Json) -> tuple[MemoryApiserver, list[tuple[Json | None, Json | None]]]:
    changes: list[tuple[Json | None, Json | None]] = []
    found = MemoryApiserver([NODE], pods, lambda old, new: changes.append((old, new)))
    return found, changes


def evict(api: MemoryApiserver, name: str, dry_run: bool = False) -> None:
    asyncio.run(api.evict("team", name, dry_run))


def test_an_eviction_that_breaks_a_budget_is_refused_with_429() -> None:
    """eviction.go: a budget allowing no disruption refuses with TooManyRequests; the
    disruption controller's status is 1 healthy of 1 desired here."""
    api, changes = store(pod("a"))
    api.create_object("poddisruptionbudgets", BUDGET)
    with pytest.raises(TooManyRequests) as refused:
        evict(api, "a")
    assert str(refused.value) == (
        "evict pod team/a: TooManyRequests: Cannot evict pod as it would violate the pod's "
        "disruption budget. The disruption budget db needs more healthy pods to allow a "
        "disruption. (the apiserver is shedding load under API Priority and Fairness; it eases "
        "on its own)"
    )
    assert changes == []


def test_a_dry_run_checks_and_changes_nothing() -> None:
    """eviction.go with dryRun=All."""
    api, changes = store(pod("a"), pod("b"))
    api.create_object("poddisruptionbudgets", BUDGET)
    evict(api, "a", dry_run=True)
    assert changes == []
    assert set(api.pods()) == {("team", "a"), ("team", "b")}


def test_an_evicted_pod_carries_the_disruption_condition_when_deleted() -> None:
    """eviction.go: DisruptionTarget (EvictionByEvictionAPI) is written before the delete."""
    api, changes = store(pod("a"), pod("b"))
    api.create_object("poddisruptionbudgets", BUDGET)
    evict(api, "a")
    old, new = changes[-1]
    assert new is None
    assert old is not None
    condition = {
        k: v for k, v in old["status"]["conditions"][0].items() if k != "lastTransitionTime"
    }
    assert condition == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }
    with pytest.raises(TooManyRequests):
        evict(api, "b")  # now the last healthy one


def test_a_pod_not_running_goes_without_a_budget_check_and_two_budgets_refuse() -> None:
    """eviction.go: a Pending pod is evicted whatever the budgets say; a pod two budgets select
    is refused (500)."""
    api, _ = store(pod("pending", bound=False), pod("a"))
    api.create_object("poddisruptionbudgets", BUDGET)
    evict(api, "pending")
    second = {**BUDGET, "metadata": {"name": "db-2", "namespace": "team"}}
    api.create_object("poddisruptionbudgets", second)
    with pytest.raises(ServerError, match="more than one PodDisruptionBudget"):
        evict(api, "a")
    with pytest.raises(NotFound):
        evict(api, "gone")


def test_budgets_are_read_with_the_disruption_controllers_status() -> None:
    api, _ = store(pod("a"), pod("b"), pod("c", labels={"app": "web"}))
    api.create_object("poddisruptionbudgets", BUDGET)
    [budget] = asyncio.run(api.disruption_budgets())
    assert budget["status"] == {"disruptionsAllowed": 1}


def test_a_hold_lasts_while_a_record_holds_nodes() -> None:
    """From a ConfigMap labelled kube-rdma.io/gang-hold appearing to its going, or to its
    record turning into a plan (the label dropped); the extender's own records, written by
    StoreRecords as ConfigMapRecords writes them."""
    now = [0.0]
    holds = HoldRecorder(lambda: now[0])
    api = MemoryApiserver([NODE], [], lambda old, new: None, on_object=holds.changed)
    records = StoreRecords(api)
    hold = PlanRecord(("team", "x"), 2, "leaf-a", ("n1", "n2"), "me", {"priority": 1000})
    records.put(hold)
    api.create_object("configmaps", {"metadata": {"name": "other", "namespace": "kube-rdma"}})
    now[0] = 600.0
    records.put(dataclasses.replace(hold, hold=None))  # planned at last: no longer a hold
    now[0] = 700.0
    records.remove(("team", "x"))
    by_hand = {
        "metadata": {"name": "h", "namespace": "kube-rdma", "labels": {keys.GANG_HOLD: "true"}},
        "data": {"gang": "team/y"},
    }
    api.create_object("configmaps", by_hand)
    now[0] = 900.0
    assert holds.held_seconds() == {("team", "x"): 600.0, ("team", "y"): 200.0}
    assert [name for _, name in api.objects["configmaps"]] == ["other", "h"]
