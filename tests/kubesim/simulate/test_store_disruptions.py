"""The extender's evictions in the simulator (StoreDisruptions) and the simulated source's reads:
a pod gone or recreated under the same name is left alone, a budget's refusal is Refused, and
a deletion of a pod already gone is no error."""

from __future__ import annotations

import asyncio

import pytest

from extender.cluster.disruptions import Refused
from kube_rdma.core.objects import Json
from kubesim.simulate.source import StoreDisruptions
from kubesim.simulate.store import MemoryApiserver
from tests.kubesim.simulate.test_store import BUDGET, NODE, pod


def store_with(*pods: Json) -> MemoryApiserver:
    api = MemoryApiserver([NODE], pods, lambda old, new: None)
    api.objects["poddisruptionbudgets"][("team", "db")] = BUDGET
    return api


def uid(api: MemoryApiserver, name: str) -> str:
    return str(api.pods()[("team", name)]["metadata"].get("uid") or "")


def test_a_budget_refusing_the_eviction_is_refused() -> None:
    api = store_with(pod("db-0"))
    with pytest.raises(Refused, match="pod team/db-0: "):
        asyncio.run(StoreDisruptions(api).evict("team", "db-0", uid(api, "db-0"), dry_run=True))


def test_a_pod_gone_or_recreated_is_left_alone() -> None:
    api = store_with(pod("db-0"), pod("db-1"))
    disruptions = StoreDisruptions(api)
    asyncio.run(disruptions.evict("team", "gone", "", dry_run=False))
    asyncio.run(disruptions.evict("team", "db-0", "another-uid", dry_run=False))
    asyncio.run(disruptions.delete("team", "db-1", "another-uid"))
    asyncio.run(disruptions.delete("team", "gone", ""))
    assert set(api.pods()) == {("team", "db-0"), ("team", "db-1")}


def test_delete_takes_the_pod_whatever_its_budget() -> None:
    api = store_with(pod("db-0"))
    asyncio.run(StoreDisruptions(api).delete("team", "db-0", uid(api, "db-0")))
    assert set(api.pods()) == set()


def test_an_event_is_recorded_in_the_store() -> None:
    api = store_with(pod("db-0"))
    asyncio.run(StoreDisruptions(api).event(pod("db-0"), "Preempted", "by gang team/x"))
    [event] = api.objects["events"].values()
    assert (event["reason"], event["message"]) == ("Preempted", "by gang team/x")
