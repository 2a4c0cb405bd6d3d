"""The gang proof: an emulated kube-scheduler drives the real extender (live mode, against the
HTTP-level fake apiserver) through a stream of gangs and singletons arriving and finishing on a
512-node cluster in 16 leaf domains, and no gang is ever left partly bound.

Kubernetes binds one pod per request, so when the barrier opens a gang's members are bound one
after another: a gang is partial for the few milliseconds that takes. "No partial gang" is
therefore checked as "no gang partial for longer than the binds of one barrier take" (1 s),
while the plain scheduler without the extender leaves gangs partial for seconds at a time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.live import LiveSource
from kubesim.scheduler import EmulatedScheduler, SchedulerConfig, Workload
from testbed.clustergen import LEAF_LABEL, ClusterSpec, generate
from testbed.fakeapi import FakeApiServer, eventually
from testbed.net import serving

CLUSTER = ClusterSpec(nodes=512, seed=11, nodes_per_leaf=32, leaves_per_spine=4, busy_fraction=0.0)
SMALL = ClusterSpec(
    nodes=8,
    seed=3,
    nodes_per_leaf=8,
    leaves_per_spine=1,
    busy_fraction=0.0,
    rail_down_fraction=0.0,
    flaky_fraction=0.0,
    no_agent_fraction=0.0,
)
CONFIG = SchedulerConfig(percentage_of_nodes_to_score=100, backoff_initial=0.05, backoff_max=0.5)
TRANSIENT = 1.0
BIND_WINDOW = 10.0
"""How long the binds of an opened barrier may take on a loaded 2-core machine; a gang left
partly bound waits a barrier timeout (4 s) and a progress timeout (30 s) first."""


@asynccontextmanager
async def extender(api: FakeApiServer, core_v1: Any) -> AsyncIterator[tuple[str, web.Application]]:
    source = LiveSource(core_v1)
    app = create_app(Settings(), source)
    async with serving(app) as url:
        await eventually(source.ready, within=30.0)
        yield url, app


def load(api: FakeApiServer, spec: ClusterSpec) -> dict[str, str]:
    """The cluster's Nodes into the apiserver; node -> leaf."""
    leaves = {}
    for obj in generate(spec):
        if obj["kind"] == "Node":
            api.create("nodes", obj)
            leaves[obj["metadata"]["name"]] = obj["metadata"]["labels"][LEAF_LABEL]
    return leaves


async def test_a_stream_of_gangs_is_never_left_partial(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    load(fake_api, CLUSTER)
    workload = Workload(
        seed=5, jobs=60, mean_interarrival=0.15, duration=(1.0, 3.0), gang_fraction=0.6
    )
    jobs = workload.stream()
    async with (
        extender(fake_api, core_v1) as (url, app),
        EmulatedScheduler(fake_api.host, url, CONFIG, workload=workload) as scheduler,
    ):
        assert await scheduler.run_until(scheduler.workload_done, timeout=150.0), (
            "every job, gangs of up to 64 pods included, is eventually placed and finishes"
        )
        decisions = {(d.gang.namespace, d.gang.name): d for d in app[EXTENDER].planner.history}
    recorder = scheduler.recorder
    gangs = {(j.namespace, j.name): j for j in jobs if j.members > 1}
    assert set(recorder.time_to_place()) >= set(gangs), "every gang was placed whole"
    spells = {k: g.spells for k, g in recorder.gangs.items() if g.spells}
    assert all(end is not None for s in spells.values() for _, end in s), spells
    # A partial spell is the barrier's own binds going out once every member arrived: short
    # (TRANSIENT on a quiet machine); a gang waiting partly bound would last a barrier timeout.
    assert recorder.max_partial_gangs(BIND_WINDOW) == 0, spells
    assert {k: g.size for k, g in recorder.gangs.items()} == {
        k: j.members for k, j in gangs.items()
    }
    for key, job in gangs.items():
        leaves = recorder.gangs[key].leaves
        if len(leaves) > 1:
            # Only when, at its last planning, no single leaf could hold the whole gang.
            assert decisions[key].narrowest_fit < job.members, (key, leaves, decisions[key])
    one_leaf = sum(len(recorder.gangs[k].leaves) == 1 for k in gangs)
    assert one_leaf >= len(gangs) // 2, "most gangs of this stream fit one leaf"


async def test_two_gangs_competing_for_one_leaf_do_not_deadlock(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    load(fake_api, SMALL)
    # Two gangs of 6 x 8 GPUs arrive together on 8 nodes: only one fits at a time.
    workload = Workload(
        seed=1, jobs=2, mean_interarrival=0.001, duration=(1.0, 1.0), gang_fraction=1.0,
        gang_sizes=((6, 1),),
    )  # fmt: skip
    async with (
        extender(fake_api, core_v1) as (url, _),
        EmulatedScheduler(fake_api.host, url, CONFIG, workload=workload) as scheduler,
    ):
        assert await scheduler.run_until(scheduler.workload_done, timeout=60.0)
    assert len(scheduler.recorder.time_to_place()) == 2
    assert scheduler.recorder.max_partial_gangs(TRANSIENT) == 0


async def test_without_the_extender_the_second_gang_sits_partial(fake_api: FakeApiServer) -> None:
    load(fake_api, SMALL)
    workload = Workload(
        seed=1, jobs=2, mean_interarrival=0.001, duration=(1.0, 1.0), gang_fraction=1.0,
        gang_sizes=((6, 1),),
    )  # fmt: skip
    plain = SchedulerConfig(use_extender=False, backoff_initial=0.05, backoff_max=0.5)
    async with EmulatedScheduler(fake_api.host, None, plain, workload=workload) as scheduler:
        assert await scheduler.run_until(scheduler.workload_done, timeout=30.0)
    # The plain scheduler binds 2 of the second gang's 6 pods at once and holds those 16 GPUs
    # idle until the first gang finishes.
    assert scheduler.recorder.max_partial_gangs(0.5) == 1
    assert scheduler.recorder.partial_gpu_seconds() > 10.0
