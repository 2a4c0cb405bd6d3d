"""The simulated-time run agrees with the real-time emulator on the same jobs: the same jobs
placed, no partial gang in either, and time to place p50 at most 20 % above the real one (and
at least one cycle: load slows only the real run, by as much as it likes).

The real-time run is the emulated kube-scheduler over HTTP against the fake apiserver and the
extender app in live mode, as the gang proofs run it; each scheduling cycle takes at least
`CYCLE` in both, so time to place is counted in cycles rather than in this machine's speed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from extender.app import Settings as AppSettings
from extender.app import create_app
from extender.cluster.live import LiveSource
from extender.weights import DEFAULT
from kubesim.scheduler import EmulatedScheduler, Workload
from kubesim.simulate.cluster import load_cluster
from kubesim.simulate.metrics import measure
from kubesim.simulate.run import Run, Settings, Variant, scheduler_config, simulate
from testbed.clustergen import ClusterSpec, generate, write_snapshot
from testbed.fakeapi import FakeApiServer, eventually

SPEC = ClusterSpec(nodes=16, seed=2, nodes_per_leaf=8, busy_fraction=0.0, rail_down_fraction=0.0,
                   flaky_fraction=0.0, no_agent_fraction=0.0)  # fmt: skip
SETTINGS = Settings(cycle=0.25, backoff_initial=0.05, backoff_max=0.5, max_unschedulable=1.0)
VARIANT = Variant("extender", DEFAULT)
WORKLOAD = Workload(
    seed=4, jobs=10, mean_interarrival=1.0, duration=(0.5, 1.5), gang_fraction=0.6,
    gang_sizes=((2, 1), (4, 1)),
)  # fmt: skip


async def real_time(api: FakeApiServer, core_v1: Any) -> tuple[EmulatedScheduler, float, float]:
    source = LiveSource(core_v1)
    runner = web.AppRunner(create_app(AppSettings(), source), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        await eventually(source.ready, within=30.0)
        config = scheduler_config(VARIANT, SETTINGS)
        async with EmulatedScheduler(api.host, url, config, workload=WORKLOAD) as scheduler:
            start = scheduler.clock.now()
            assert scheduler.jobs is not None
            jobs = scheduler.jobs
            assert await scheduler.run_until(lambda: jobs.all_started, timeout=60.0)
            return scheduler, start, scheduler.clock.now()
    finally:
        await runner.cleanup()


async def test_simulated_time_agrees_with_real_time(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path
) -> None:
    objects = generate(SPEC)
    for obj in objects:
        if obj["kind"] == "Node":
            fake_api.create("nodes", obj)
    write_snapshot(objects, tmp_path / "cluster.json")
    cluster = load_cluster(tmp_path / "cluster.json")
    jobs = WORKLOAD.stream()
    started = time.perf_counter()
    emulator, start, end = await real_time(fake_api, core_v1)
    real = measure(Run(VARIANT, emulator, start, end, time.perf_counter() - started), jobs, cluster)
    # The simulation runs its own event loop: in a thread of its own, beside the test's.
    run = await asyncio.to_thread(simulate, cluster, jobs, VARIANT, SETTINGS)
    simulated = measure(run, jobs, cluster)
    assert real["jobs_placed"] == simulated["jobs_placed"] == len(jobs)
    assert real["partial_gangs"]["gangs"] == simulated["partial_gangs"]["gangs"] == 0
    real_p50 = real["time_to_place_seconds"]["p50"]
    simulated_p50 = simulated["time_to_place_seconds"]["p50"]
    # A loaded machine only ever slows the real-time run (its cycles take CYCLE or longer, by
    # as much as the load makes them), so only the upper bound compares the two; below, every
    # pod takes one cycle at least.
    assert SETTINGS.cycle <= simulated_p50 <= 1.2 * real_p50, (simulated_p50, real_p50)
