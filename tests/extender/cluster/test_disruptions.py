"""Evictions, deletions and events through the apiserver (the fake one, over HTTP): a budget's
429 is Refused, a pod already gone is no error, a server error is Refused with its reason, and
an event that cannot be written is logged, never raised."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from extender.cluster.disruptions import LiveDisruptions, Refused
from testbed.builders import nodes
from testbed.fakeapi import FakeApiServer, eventually

BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "db", "namespace": "team-a"},
    "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "db"}}},
    "status": {"disruptionsAllowed": 0},
}
EVICTION = "/api/v1/namespaces/team-a/pods/w/eviction"


def running(name: str, labels: dict[str, str] | None = None) -> Any:
    pod = nodes.pod(name, node_name="n1", phase="Running")
    pod["metadata"]["labels"] = labels or {}
    return pod


async def test_a_budget_refuses_and_nothing_is_evicted(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("poddisruptionbudgets", BUDGET, "team-a")
    pod = fake_api.create("pods", running("db-0", {"app": "db"}), "team-a")
    with pytest.raises(Refused, match="pod team-a/db-0: Cannot evict pod"):
        await LiveDisruptions(core_v1).evict("team-a", "db-0", pod["metadata"]["uid"], True)
    assert fake_api.get("pods", "db-0", "team-a")["metadata"]["name"] == "db-0"


async def test_evict_and_delete_of_a_pod_gone_are_no_error(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    disruptions = LiveDisruptions(core_v1)
    await disruptions.evict("team-a", "gone", "", False)
    await disruptions.delete("team-a", "gone", "")


async def test_delete_takes_the_pod_with_its_uid_as_precondition(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    pod = fake_api.create("pods", running("w"), "team-a")
    disruptions = LiveDisruptions(core_v1)
    with pytest.raises(Refused, match="pod team-a/w: "):
        await disruptions.delete("team-a", "w", "another-uid")
    await disruptions.delete("team-a", "w", pod["metadata"]["uid"])
    assert [p["metadata"]["name"] for p in fake_api.objects("pods", "team-a")] == []


async def test_a_server_error_on_eviction_is_refused_with_its_reason(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("pods", running("w"), "team-a")
    fake_api.fail("POST", EVICTION, 500)
    with pytest.raises(Refused, match="pod team-a/w: "):
        await LiveDisruptions(core_v1).evict("team-a", "w", "", False)


async def test_an_event_that_cannot_be_written_is_logged(
    fake_api: FakeApiServer, core_v1: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    fake_api.fail("POST", "/api/v1/namespaces/team-a/events", 500)
    await LiveDisruptions(core_v1).event(running("w"), "Preempted", "by gang team-a/x")
    assert any(
        r.getMessage().startswith("could not record event Preempted") for r in caplog.records
    )
    assert fake_api.objects("events", "team-a") == []


async def test_an_evicted_pod_stays_terminating_for_the_grace_then_is_gone(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    """With a termination grace the evicted pod is marked, kept, and deleted once it passed
    (as the kubelet does): what a preemption waits for before its gang is placed."""
    fake_api.termination.seconds = 0.3
    pod = fake_api.create("pods", running("w"), "team-a")
    await LiveDisruptions(core_v1).evict("team-a", "w", pod["metadata"]["uid"], False)
    kept = fake_api.get("pods", "w", "team-a")["metadata"]
    assert (bool(kept.get("deletionTimestamp")), kept["deletionGracePeriodSeconds"]) == (True, 1)
    await LiveDisruptions(core_v1).evict("team-a", "w", pod["metadata"]["uid"], False)
    await eventually(lambda: fake_api.objects("pods", "team-a") == [], within=30)
