"""The extender calls as the emulated scheduler makes them: exact /filter, /prioritize and /bind
bodies, the rotating sample, and the rules by which a call fails, against a recording stub."""

from __future__ import annotations

import pytest

from kubesim.scheduler import EmulatedScheduler, SchedulerConfig
from testbed.fakeapi import FakeApiServer, eventually
from tests.kubesim.scheduler.cluster import FAST, node, pod, summary
from tests.kubesim.scheduler.stub_extender import StubExtender

NAMES = [f"node-{i:03d}" for i in range(150)]


async def test_filter_prioritize_bind_bodies_and_the_rotating_sample(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    for name in NAMES:
        fake_api.create("nodes", node(name))
    extender.scores = {"node-003": 9, "node-007": 10, "node-120": 10}
    async with EmulatedScheduler(fake_api.host, url, FAST) as scheduler:
        for name in ("w-2", "w-1", "w-3"):  # queued as they are created, whatever their names
            fake_api.create("pods", pod(name))
        await eventually(lambda: len(scheduler.queue) == 3)
        first = fake_api.get("pods", "w-2", "team-a")
        attempts = [await scheduler.step() for _ in range(3)]
        await eventually(lambda: len(scheduler.binds) == 3)
    # 150 nodes: 49% is 73, so 100 are sent, from where the previous cycle stopped.
    samples = [body["NodeNames"] for verb, body in extender.calls if verb == "filter"]
    assert samples == [NAMES[:100], NAMES[100:] + NAMES[:50], NAMES[50:]]
    assert extender.calls[0] == ("filter", {"Pod": first, "Nodes": None, "NodeNames": NAMES[:100]})
    assert extender.calls[1] == ("prioritize", extender.calls[0][1])
    # LeastAllocated: 87 for an empty node, 75 with one GPU taken; the extender adds score x 50.
    # w-2: node-007 587 > node-003 537. w-1: node-120 587 > node-007 575. w-3: node-120 575.
    assert [summary(a) for a in attempts] == [
        ("w-2", "assumed", "node-007", 100),
        ("w-1", "assumed", "node-120", 100),
        ("w-3", "assumed", "node-120", 100),
    ]
    binds = sorted((b for v, b in extender.calls if v == "bind"), key=lambda b: b["PodName"])
    assert binds[1] == {
        "PodName": "w-2",
        "PodNamespace": "team-a",
        "PodUID": first["metadata"]["uid"],
        "Node": "node-007",
    }
    assert [fake_api.get("pods", p, "team-a")["spec"]["nodeName"] for p in ("w-2", "w-1")] == [
        "node-007",
        "node-120",
    ]
    assert all(b.ok and b.via == "extender" for b in scheduler.binds)


async def test_a_node_the_extender_was_not_sent_fails_the_attempt(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    extender.passing = lambda names: [*names, "n9"]
    async with EmulatedScheduler(fake_api.host, url, FAST) as scheduler:
        fake_api.create("pods", pod("w"))
        await eventually(lambda: ("team-a", "w") in scheduler.queue)
        attempt = await scheduler.step()
        queued = scheduler.queue.get(("team-a", "w"))
    assert attempt is not None
    assert (attempt.outcome, attempt.message) == (
        "error",
        f'extender "{url}" claims a filtered node "n9" which is not found in the input node list',
    )
    assert queued is not None
    assert queued.backoff_until - queued.timestamp == pytest.approx(FAST.backoff_initial)
    assert extender.verbs() == ["filter"]


async def test_prioritize_is_skipped_for_one_node_and_its_errors_ignored(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    for name in ("n1", "n2", "n3"):
        fake_api.create("nodes", node(name))
    extender.passing = lambda names: names[-1:]
    async with EmulatedScheduler(fake_api.host, url, FAST) as scheduler:
        fake_api.create("pods", pod("w0"))
        await eventually(lambda: len(scheduler.queue) == 1)
        one = await scheduler.step()
        extender.passing = list
        extender.status["prioritize"] = 500
        fake_api.create("pods", pod("w1", gpus=8))
        await eventually(lambda: len(scheduler.queue) == 1)
        erred = await scheduler.step()
        await eventually(lambda: len(scheduler.binds) == 2)
    assert [summary(one), summary(erred)] == [
        ("w0", "assumed", "n3", 3),
        ("w1", "assumed", "n1", 2),
    ]
    assert extender.verbs()[:2] == ["filter", "bind"]
    assert extender.verbs()[2:4] == ["filter", "prioritize"]


async def test_an_extender_timeout_fails_the_attempt(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    extender.delay = 0.2
    config = SchedulerConfig(http_timeout=0.05, backoff_initial=0.05, backoff_max=0.2)
    async with EmulatedScheduler(fake_api.host, url, config) as scheduler:
        fake_api.create("pods", pod("w"))
        await eventually(lambda: len(scheduler.queue) == 1)
        attempt = await scheduler.step()
    assert attempt is not None
    assert (attempt.outcome, attempt.message) == (
        "error",
        f"filter with extender at URL {url}/filter: TimeoutError",
    )


async def test_pods_without_managed_resources_skip_the_extender(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    async with EmulatedScheduler(fake_api.host, url, FAST) as scheduler:
        fake_api.create("pods", pod("cpu-only", gpus=0))
        await eventually(lambda: len(scheduler.queue) == 1)
        await scheduler.step()
        await eventually(lambda: scheduler.binds)
    assert extender.calls == []
    assert [(b.via, b.ok) for b in scheduler.binds] == [("apiserver", True)]
    assert fake_api.get("pods", "cpu-only", "team-a")["spec"]["nodeName"] == "n1"
