"""The partial-gang recorder, driven by hand through the fake apiserver with a manual clock."""

from __future__ import annotations

from kube_rdma.core import keys
from kubesim.scheduler import EmulatedScheduler, ManualClock, SchedulerConfig
from testbed.fakeapi import FakeApiServer, eventually
from tests.kubesim.scheduler.cluster import node, pod

GANG_KEY = ("team-a", "llama")


async def test_recorder_sees_a_partial_gang_and_its_gpu_seconds(fake_api: FakeApiServer) -> None:
    for i in range(4):
        fake_api.create("nodes", node(f"n{i}", labels={keys.LEAF: f"leaf-{i // 2:03d}"}))
    clock = ManualClock()
    gang = {keys.GANG: "llama", keys.GANG_SIZE: "4"}
    config = SchedulerConfig(use_extender=False, scheduler_name="not-us")
    async with EmulatedScheduler(fake_api.host, None, config, clock) as scheduler:
        recorder = scheduler.recorder
        for i in range(4):
            fake_api.create("pods", pod(f"m{i}", gpus=8, annotations=gang))
        fake_api.create("pods", pod("alone", gpus=8))
        for i in range(2):
            fake_api.bind("team-a", {"metadata": {"name": f"m{i}"}, "target": {"name": f"n{i}"}})
        fake_api.bind("team-a", {"metadata": {"name": "alone"}, "target": {"name": "n3"}})
        await eventually(lambda: GANG_KEY in recorder.gangs and recorder.gangs[GANG_KEY].bound == 2)
        assert (recorder.partial_gangs, recorder.max_partial) == (1, 1)
        assert recorder.partial_gpu_seconds() == 0.0
        clock.advance(2.0)
        assert recorder.partial_gpu_seconds() == 32.0  # 2 members x 8 GPUs x 2 s
        clock.advance(1.0)
        assert recorder.partial_gpu_seconds() == 48.0
        for i in (2, 3):
            fake_api.bind("team-a", {"metadata": {"name": f"m{i}"}, "target": {"name": f"n{i}"}})
        await eventually(lambda: recorder.partial_gangs == 0)
        clock.advance(5.0)
        assert recorder.partial_gpu_seconds() == 48.0
        fake_api.delete("pods", "m0", "team-a")  # a finished gang going away is not partial
        await eventually(lambda: len(recorder.gangs[GANG_KEY].members) == 3)
    placed = recorder.gangs[GANG_KEY]
    assert (recorder.partial_gangs, recorder.max_partial) == (0, 1)
    assert recorder.time_to_place() == {GANG_KEY: 3.0}
    assert placed.nodes == ("n0", "n1", "n2", "n3")
    assert placed.leaves == {"leaf-000", "leaf-001"}
    assert placed.spells == [(0.0, 3.0)]
    assert (recorder.max_partial_gangs(2.5), recorder.max_partial_gangs(3.0)) == (1, 0)
    assert list(recorder.gangs) == [GANG_KEY]
