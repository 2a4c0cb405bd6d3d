"""Singletons and gangs of a workload bound through the real extender in live mode, against the
fake apiserver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from extender.app import Settings, create_app
from extender.cluster.live import LiveSource
from kubesim.scheduler import GPU, EmulatedScheduler, Workload, bound_node
from testbed.clustergen import ClusterSpec, generate
from testbed.fakeapi import FakeApiServer, eventually
from testbed.net import serving
from tests.kubesim.scheduler.cluster import FAST

CLUSTER = ClusterSpec(nodes=32, nodes_per_leaf=16, busy_fraction=0.25, seed=3)


@pytest.fixture
async def extender_url(fake_api: FakeApiServer, core_v1: Any) -> AsyncIterator[str]:
    """The real extender app, watching `fake_api`, on a loopback port; the cluster loaded with
    its Nodes and the pods already running on them."""
    for obj in generate(CLUSTER):
        if obj["kind"] == "Node":
            fake_api.create("nodes", obj)
        elif bound_node(obj):
            fake_api.create("pods", obj)
    source = LiveSource(core_v1)
    async with serving(create_app(Settings(), source)) as url:
        await eventually(source.ready, within=30.0)
        yield url


def used_gpus(api: FakeApiServer) -> dict[str, int]:
    used: dict[str, int] = {}
    for obj in api.objects("pods"):
        if node_name := bound_node(obj):
            gpus = int(obj["spec"]["containers"][0]["resources"]["limits"][GPU])
            used[node_name] = used.get(node_name, 0) + gpus
    return used


async def test_singletons_bind_through_the_extender(
    fake_api: FakeApiServer, extender_url: str
) -> None:
    workload = Workload(
        seed=1, jobs=8, gang_fraction=0.0, mean_interarrival=0.01, duration=(0.2, 0.3)
    )
    before = {p["metadata"]["name"] for p in fake_api.objects("pods")}
    peak: dict[str, int] = {}
    async with EmulatedScheduler(fake_api.host, extender_url, FAST, workload=workload) as scheduler:

        def done() -> bool:
            for name, gpus in used_gpus(fake_api).items():
                peak[name] = max(peak.get(name, 0), gpus)
            return scheduler.workload_done()

        assert await scheduler.run_until(done, timeout=30.0)
    assert len(scheduler.binds) == 8
    assert all(b.ok and b.via == "extender" for b in scheduler.binds)
    by_extender = [r for r in fake_api.requests if r.path.endswith("/binding")]
    assert sorted(r.body["metadata"]["name"] for r in by_extender) == sorted(
        f"job-{i:04d}-00" for i in range(8)
    )
    assert {p["metadata"]["name"] for p in fake_api.objects("pods")} == before
    assert all(peak[n] <= scheduler.nodes[n].allocatable[GPU] for n in peak)
    assert scheduler.jobs is not None
    assert len(scheduler.jobs.finished) == 8


async def test_gangs_are_placed_and_recorded(fake_api: FakeApiServer, extender_url: str) -> None:
    workload = Workload(
        seed=2,
        jobs=4,
        gang_fraction=1.0,
        gang_sizes=((2, 1), (4, 1)),
        mean_interarrival=0.05,
        duration=(0.2, 0.3),
    )
    async with EmulatedScheduler(fake_api.host, extender_url, FAST, workload=workload) as scheduler:
        assert await scheduler.run_until(scheduler.workload_done, timeout=30.0)
    recorder = scheduler.recorder
    sizes = {(j.namespace, j.name): j.members for j in workload.stream()}
    assert {k: g.size for k, g in recorder.gangs.items()} == sizes
    assert set(recorder.time_to_place()) == set(sizes)
    for key, gang in recorder.gangs.items():
        assert len(gang.nodes) == sizes[key]
        assert gang.leaves <= {"leaf-000", "leaf-001"}
        assert len(gang.leaves) >= 1
    assert recorder.partial_gangs == 0
    assert all(b.ok for b in scheduler.binds)
