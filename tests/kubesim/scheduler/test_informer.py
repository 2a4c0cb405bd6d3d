"""The informer cache keeps up through a watch the server ends and one answered 410 Gone."""

from __future__ import annotations

from kubesim.scheduler import EmulatedScheduler, SchedulerConfig
from testbed.fakeapi import FakeApiServer, eventually
from tests.kubesim.scheduler.cluster import node, pod


async def test_the_informer_survives_an_ended_and_expired_watch(fake_api: FakeApiServer) -> None:
    fake_api.create("nodes", node("n1"))
    async with EmulatedScheduler(
        fake_api.host, None, SchedulerConfig(use_extender=False)
    ) as scheduler:
        await eventually(lambda: fake_api.watching == 2)
        fake_api.end_watches()
        fake_api.create("pods", pod("w", gpus=8))
        fake_api.delete("nodes", "n1")
        fake_api.create("nodes", node("n2"))
        fake_api.compact()  # the re-watch from the last version seen gets 410: a re-list
        await eventually(lambda: ("team-a", "w") in scheduler.queue and "n2" in scheduler.nodes)
        assert await scheduler.run_until(lambda: bool(scheduler.binds), timeout=30.0)
    assert list(scheduler.nodes) == ["n2"]
    assert [(b.pod, b.node, b.ok) for b in scheduler.binds] == [(("team-a", "w"), "n2", True)]
