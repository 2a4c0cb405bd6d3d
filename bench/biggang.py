"""Gangs of the size real jobs have: one gang of 256, 512 or 1,024 pods x 8 GPUs on a 5,000-node
cluster, with singletons competing for the same nodes, through the real extender (live mode,
against the HTTP-level fake apiserver) and an emulated kube-scheduler (kubesim/scheduler) whose
cycles each spend 20 ms in in-tree plugins, with the production barrier settings (a member's
bind request waits 4 s, the gang 30 s for its next member) and kube-scheduler's default backoff.

At 20 ms a cycle and more, the members of such a gang reach /bind over far more than one bind
request's timeout. Reported per gang size:
- placed whole, and from how many plans (1: in one pass, no plan dropped and redone);
- time to place: the gang's first pod created to its last bound;
- arrival spread: the first member's bind request to the last member's first one;
- the longest partly-bound span: some but not all members bound;
- bind requests that timed out at the barrier (the member kept its place), and that failed else;
- singletons placed, and the cycles run.

    python -m bench.biggang [--sizes 256 512 1024] [--singletons 200]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from typing import Any

from kubernetes_asyncio import client

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.live import LiveSource
from kubesim.scheduler import EmulatedScheduler, Job, Jobs, SchedulerConfig, Workload, bound_node
from testbed.clustergen import ClusterSpec, generate
from testbed.fakeapi import FakeApiServer, eventually
from testbed.net import serving

CLUSTER = ClusterSpec(nodes=5000, seed=11, nodes_per_leaf=32, leaves_per_spine=8, busy_fraction=0.0)
CONFIG = SchedulerConfig(percentage_of_nodes_to_score=100, in_tree_time=0.020)
"""kube-scheduler's defaults otherwise: httpTimeout 5 s, backoff 1 s to 10 s."""


async def run(size: int, singletons: int, limit: float) -> dict[str, Any]:
    gang = Job(f"llm-{size}", "team-llm", members=size, gpus=8, arrival=0.0, duration=3600.0)
    others = Workload(
        seed=3, jobs=singletons, mean_interarrival=0.05, duration=(3600.0, 3600.0), gang_fraction=0
    )
    jobs = Jobs((gang, *others.stream()))
    async with FakeApiServer() as api, api.api_client() as api_client:
        for obj in generate(CLUSTER):
            if obj["kind"] == "Node":
                api.create("nodes", obj)
        source = LiveSource(client.CoreV1Api(api_client))
        app = create_app(Settings(), source)
        async with serving(app) as url:
            await eventually(source.ready, within=300.0)
            async with EmulatedScheduler(api.host, url, CONFIG, workload=jobs) as scheduler:
                started = time.perf_counter()
                everyone = size + singletons

                def all_bound() -> bool:
                    pods = scheduler.informer.pods()
                    return len(pods) == everyone and all(bound_node(p) for p in pods)

                finished = await scheduler.run_until(all_bound, timeout=limit)
                elapsed = time.perf_counter() - started
                plans = sum(1 for d in app[EXTENDER].planner.history if d.gang.name == gang.name)
    return summarize(scheduler, gang, finished, elapsed, plans)


def summarize(
    scheduler: EmulatedScheduler, gang: Job, finished: bool, elapsed: float, plans: int
) -> dict[str, Any]:
    record = scheduler.recorder.gangs.get((gang.namespace, gang.name))
    members = [b for b in scheduler.binds if b.pod[1].startswith(f"{gang.name}-")]
    firsts: dict[str, float] = {}
    for b in members:
        firsts.setdefault(b.pod[1], b.started)
    spans = [
        (end or scheduler.clock.now()) - start for start, end in (record.spells if record else [])
    ]
    attempts = sum(1 for a in scheduler.attempts if a.pod[1].startswith(f"{gang.name}-"))
    return {
        "finished": finished,
        "elapsed": elapsed,
        "placed": record is not None and record.placed is not None,
        "plans": plans,
        "place": (record.placed - record.created) if record and record.placed else float("nan"),
        "spread": max(firsts.values()) - min(firsts.values()) if firsts else float("nan"),
        "partial": max(spans, default=0.0),
        "kept": sum(1 for b in members if "keeps its place" in b.error),
        "failed": sum(1 for b in members if b.error and "keeps its place" not in b.error),
        "attempts": attempts,
        "cycles": len(scheduler.attempts),
    }


def limited(result: dict[str, Any]) -> str:
    return "" if result["finished"] else " (stopped at --limit)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--singletons", type=int, default=200)
    parser.add_argument("--limit", type=float, default=900.0, help="seconds per run at most")
    args = parser.parse_args()
    logging.getLogger("kube_rdma").setLevel(logging.ERROR)  # a line per timed-out bind request
    print(
        f"big gangs: {CLUSTER.nodes} nodes, {CONFIG.in_tree_time * 1000:.0f} ms in-tree per cycle, "
        f"{args.singletons} singletons competing"
    )
    header = (
        "gang", "placed", "plans", "to place", "arrivals over", "longest partial",
        "req. timeouts", "other bind errors", "gang cycles", "all cycles", "run",
    )  # fmt: skip
    print("  ".join(header))
    for size in args.sizes:
        r = asyncio.run(run(size, args.singletons, args.limit))
        row = (
            str(size), str(r["placed"]), str(r["plans"]), f"{r['place']:.1f} s",
            f"{r['spread']:.1f} s", f"{r['partial']:.2f} s", str(r["kept"]), str(r["failed"]),
            str(r["attempts"]), str(r["cycles"]), f"{r['elapsed']:.0f} s" + limited(r),
        )  # fmt: skip
        print("  ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
