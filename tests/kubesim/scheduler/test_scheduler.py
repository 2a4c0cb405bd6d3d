"""The scheduling and binding cycles: a pod assumed while its bind is held, a failed bind
forgotten and backed off, the default binder, backoff doubling on an extender that is down, and
a crash in a watch surfacing instead of a stall."""

from __future__ import annotations

import asyncio

import pytest

from kube_rdma.core.objects import Json
from kubesim.scheduler import GPU, RDMA, EmulatedScheduler, ManualClock, SchedulerConfig
from testbed.fakeapi import FakeApiServer, eventually
from testbed.net import free_port
from tests.kubesim.scheduler.cluster import FAST, node, pod, summary
from tests.kubesim.scheduler.stub_extender import StubExtender


async def test_a_pod_is_assumed_on_its_node_while_its_bind_is_held(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    extender.hold = asyncio.Event()
    async with EmulatedScheduler(fake_api.host, url, FAST) as scheduler:
        for name in ("w0", "w1"):
            fake_api.create("pods", pod(name, gpus=8))
        await eventually(lambda: len(scheduler.queue) == 2)
        first = await scheduler.step()
        await eventually(lambda: "bind" in extender.verbs())
        second = await scheduler.step()  # while w0's bind is held, n1 counts as full
        extender.hold.set()
        await eventually(lambda: scheduler.binds)
    assert summary(first) == ("w0", "assumed", "n1", 1)
    assert second is not None
    assert (second.outcome, second.message) == (
        "unschedulable",
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.",
    )
    assert extender.verbs() == ["filter", "bind"]


async def test_a_failed_bind_is_forgotten_and_backs_off(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", node("n1"))
    extender.bind_error = "gang team-a/x timed out at the barrier"
    async with EmulatedScheduler(fake_api.host, url, FAST) as scheduler:
        fake_api.create("pods", pod("w", gpus=8))
        await eventually(lambda: len(scheduler.queue) == 1)
        attempt = await scheduler.step()
        assert scheduler.assumed == {("team-a", "w"): "n1"}
        assert scheduler.usage.of("n1") == {GPU: 8, RDMA: 1, "pods": 1}
        await eventually(lambda: scheduler.binds)
        queued = scheduler.queue.get(("team-a", "w"))
        assert (scheduler.assumed, scheduler.usage.of("n1")) == ({}, {GPU: 0, RDMA: 0, "pods": 0})
    assert summary(attempt) == ("w", "assumed", "n1", 1)
    assert [(b.via, b.error) for b in scheduler.binds] == [("extender", extender.bind_error)]
    assert queued is not None
    assert queued.backoff_until - queued.timestamp == pytest.approx(FAST.backoff_initial)
    assert fake_api.get("pods", "w", "team-a")["spec"].get("nodeName") is None


async def test_plain_kube_scheduler_binds_through_the_apiserver(fake_api: FakeApiServer) -> None:
    for name in ("n1", "n2"):
        fake_api.create("nodes", node(name))
    config = SchedulerConfig(use_extender=False)
    async with EmulatedScheduler(fake_api.host, None, config) as scheduler:
        for name in ("w0", "w1", "w2"):
            fake_api.create("pods", pod(name, gpus=8))
        done = await scheduler.run_until(
            lambda: len(scheduler.binds) == 2 and len(scheduler.attempts) == 3, timeout=30.0
        )
    assert done
    # The two binding cycles run at once: they may finish in either order.
    assert sorted((b.pod[1], b.node, b.via, b.ok) for b in scheduler.binds) == [
        ("w0", "n1", "apiserver", True),
        ("w1", "n2", "apiserver", True),
    ]
    assert [(a.pod[1], a.outcome, a.message) for a in scheduler.attempts[2:]] == [
        (
            "w2",
            "unschedulable",
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are "
            "available: 2 No preemption victims found for incoming pod.",
        )
    ]
    bindings = sorted(r.path for r in fake_api.requests if r.path.endswith("/binding"))
    assert bindings == [f"/api/v1/namespaces/team-a/pods/{p}/binding" for p in ("w0", "w1")]


async def test_a_bind_the_apiserver_refuses_is_retried(fake_api: FakeApiServer) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.fail("POST", "/api/v1/namespaces/team-a/pods/w/binding", 500)
    config = SchedulerConfig(use_extender=False, backoff_initial=0.05, backoff_max=0.2)
    async with EmulatedScheduler(fake_api.host, None, config) as scheduler:
        fake_api.create("pods", pod("w", gpus=8))
        assert await scheduler.run_until(lambda: len(scheduler.binds) == 2, timeout=30.0)
    assert [(b.pod, b.node, b.via, b.error) for b in scheduler.binds] == [
        (
            ("team-a", "w"),
            "n1",
            "apiserver",
            "binding team-a/w to n1: InternalError: fake apiserver: injected failure",
        ),
        (("team-a", "w"), "n1", "apiserver", ""),
    ]
    assert fake_api.get("pods", "w", "team-a")["spec"]["nodeName"] == "n1"


async def test_a_crashed_watch_surfaces_from_step(
    fake_api: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with EmulatedScheduler(
        fake_api.host, None, SchedulerConfig(use_extender=False)
    ) as scheduler:

        def broken(old: Json | None, new: Json | None) -> None:
            raise RuntimeError("a bug in the recorder")

        monkeypatch.setattr(scheduler.recorder, "pod_changed", broken)
        fake_api.create("pods", pod("w"))
        await eventually(lambda: scheduler.informer.crash() is not None)
        with pytest.raises(RuntimeError, match="a bug in the recorder"):
            await scheduler.step()


async def test_a_filter_that_fails_backs_the_pod_off_doubling(fake_api: FakeApiServer) -> None:
    fake_api.create("nodes", node("n1"))
    clock = ManualClock(100.0)
    url = f"http://127.0.0.1:{free_port()}"
    async with EmulatedScheduler(fake_api.host, url, SchedulerConfig(), clock) as scheduler:
        fake_api.create("pods", pod("w"))
        await eventually(lambda: len(scheduler.queue) == 1)
        waits = []
        for _ in range(6):
            attempt = await scheduler.step()
            assert attempt is not None
            assert attempt.outcome == "error"
            assert attempt.message.startswith(f"filter with extender at URL {url}/filter: ")
            queued = scheduler.queue.get(("team-a", "w"))
            assert queued is not None
            waits.append(queued.backoff_until - clock.now())
            clock.advance(waits[-1] - 0.01)
            assert await scheduler.step() is None  # still backing off
            clock.advance(0.01)
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
