"""Gang placement, with and without the extender: the same stream, side by side.

An emulated kube-scheduler (extender/sim: kube-scheduler's queue, sampling, extender calls,
assumed pods and asynchronous binding) schedules a deterministic stream of training jobs, gangs
of 2 to 64 pods x 8 GPUs and singletons, arriving and finishing, on a generated 512-node cluster
in 16 leaf domains (2 % of nodes with a rail down, 1 % with a flaky port). Once through the real
extender in live mode against the HTTP-level fake apiserver, with percentageOfNodesToScore 100
and the bind verb, and once as a plain kube-scheduler (in-tree fit and the default binder).
Reported per run:
- partial gangs: the most gangs partly bound at one moment, counting only spells longer than
  1 s (when the barrier opens, the members' binds take a few ms: those are not counted) and all;
- GPU-hours held by partial gangs (bound members' GPUs while their gang waits);
- time to place a gang (first member created to all bound);
- domain locality: gangs that ended in one leaf domain;
- GPU-NIC levels: for every GPU of every placed pod, its NIC's PCIe level in the best pairing
  on its node (PIX / PXB / other, "none" when a GPU had no usable NIC).

    python -m bench.gang [--jobs 150] [--seed 5]        (make bench)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client

from extender.app import Settings, create_app
from extender.cluster.live import LiveSource
from extender.pairing import profile, rails
from extender.sim import GPU, EmulatedScheduler, SchedulerConfig, Workload, pod_requests
from kube_rdma.core.topology import Topology, decode
from testbed.clustergen import ClusterSpec, generate
from testbed.fakeapi import FakeApiServer, eventually

CLUSTER = ClusterSpec(nodes=512, seed=11, nodes_per_leaf=32, leaves_per_spine=4, busy_fraction=0.0)
TRANSIENT = 1.0
Row = tuple[str, Callable[[dict[str, Any]], str]]


async def run(workload: Workload, with_extender: bool) -> dict[str, Any]:
    objects = generate(CLUSTER)
    topologies: dict[str, Topology] = {}
    async with FakeApiServer() as api, api.api_client() as api_client:
        for obj in objects:
            if obj["kind"] == "Node":
                api.create("nodes", obj)
                annotation = obj["metadata"]["annotations"].get("kube-rdma.io/topology")
                if annotation:
                    topologies[obj["metadata"]["name"]] = decode(annotation)
        runner = None
        url = None
        if with_extender:
            source = LiveSource(client.CoreV1Api(api_client))
            runner = web.AppRunner(create_app(Settings(), source), access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            await eventually(source.ready, within=60.0)
            url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        config = SchedulerConfig(
            use_extender=with_extender,
            percentage_of_nodes_to_score=100 if with_extender else None,
            backoff_initial=0.05,
            backoff_max=0.5,
        )
        started = time.perf_counter()
        try:
            async with EmulatedScheduler(api.host, url, config, workload=workload) as scheduler:
                finished = await scheduler.run_until(scheduler.workload_done, timeout=300.0)
        finally:
            if runner is not None:
                await runner.cleanup()
        elapsed = time.perf_counter() - started
    return summarize(scheduler, workload, topologies, finished, elapsed)


def summarize(
    scheduler: EmulatedScheduler,
    workload: Workload,
    topologies: dict[str, Topology],
    finished: bool,
    elapsed: float,
) -> dict[str, Any]:
    recorder = scheduler.recorder
    gangs = [j for j in workload.stream() if j.members > 1]
    places = sorted(recorder.time_to_place().values())
    levels: Counter[str] = Counter()
    gpus_of = {
        (p["metadata"]["namespace"], p["metadata"]["name"]): pod_requests(p).get(GPU, 0)
        for job in workload.stream()
        for p in job.pods(scheduler.config.scheduler_name)
    }
    for bind in scheduler.binds:
        if not bind.ok or bind.node not in topologies:
            continue
        gpus = gpus_of.get(bind.pod, 0)
        found = rails(topologies[bind.node], "Ethernet", None)
        got = profile(found, gpus)
        for level, count in got.items():
            levels[level if level in ("PIX", "PXB") else "other"] += count
        levels["none"] += gpus - sum(got.values())
    placed_gangs = [
        recorder.gangs[(j.namespace, j.name)]
        for j in gangs
        if (j.namespace, j.name) in recorder.gangs
    ]
    one_leaf = sum(1 for g in placed_gangs if g.placed is not None and len(g.leaves) == 1)
    total_levels = sum(levels.values()) or 1
    return {
        "finished": finished,
        "elapsed": elapsed,
        "gangs": len(gangs),
        "placed": len(places),
        "partial_long": recorder.max_partial_gangs(TRANSIENT),
        "partial_any": recorder.max_partial,
        "gpu_hours": recorder.partial_gpu_seconds() / 3600,
        "place_p50": statistics.median(places) if places else float("nan"),
        "place_p95": places[int(0.95 * (len(places) - 1))] if places else float("nan"),
        "one_leaf": one_leaf,
        "levels": {k: 100 * levels[k] / total_levels for k in ("PIX", "PXB", "other", "none")},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--interarrival", type=float, default=0.03, help="mean seconds")
    parser.add_argument("--duration", type=float, nargs=2, default=(5.0, 15.0), help="seconds")
    args = parser.parse_args()
    workload = Workload(
        seed=args.seed,
        jobs=args.jobs,
        mean_interarrival=args.interarrival,
        duration=tuple(args.duration),
        gang_fraction=0.6,
    )
    results = {}
    for label, with_extender in (("with extender", True), ("plain kube-scheduler", False)):
        results[label] = asyncio.run(run(workload, with_extender))

    def levels(level: str) -> Row:
        return (f"GPUs at {level} NIC", lambda r: f"{r['levels'][level]:.1f} %")

    rows: list[Row] = [
        ("all jobs done", lambda r: f"{r['finished']} ({r['elapsed']:.0f} s)"),
        ("gangs placed whole", lambda r: f"{r['placed']} of {r['gangs']}"),
        ("partial gangs at once (> 1 s)", lambda r: str(r["partial_long"])),
        ("partial gangs at once (any)", lambda r: str(r["partial_any"])),
        ("GPU-hours held by partial gangs", lambda r: f"{r['gpu_hours']:.3f}"),
        (
            "time to place a gang p50 / p95",
            lambda r: f"{r['place_p50']:.2f} / {r['place_p95']:.2f} s",
        ),
        ("gangs in one leaf", lambda r: f"{r['one_leaf']} of {r['placed']}"),
        *(levels(level) for level in ("PIX", "PXB", "other", "none")),
    ]
    table = [
        (name, show(results["with extender"]), show(results["plain kube-scheduler"]))
        for name, show in rows
    ]
    print(
        f"gang bench: {CLUSTER.nodes} nodes in {CLUSTER.nodes // CLUSTER.nodes_per_leaf} leaves, "
        f"{args.jobs} jobs (seed {args.seed})"
    )
    width = max(len(r[0]) for r in table)
    print(f"  {'':<{width}}  {'with extender':>22}  {'plain kube-scheduler':>22}")
    for name, left, right in table:
        print(f"  {name:<{width}}  {left:>22}  {right:>22}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
