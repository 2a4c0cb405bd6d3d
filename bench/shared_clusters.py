"""Shared clusters, simulated: a big gang among a stream of small jobs, a high-priority gang on a
full cluster, and a day of mixed priorities, each with the extender and with plain
kube-scheduler (whose own preemption runs in both).

    python -m bench.shared_clusters [--only starvation|preemption|day] [--day-nodes 2000]
        [--day-load 1.0] [--day-busy 0.3] [--day-jobs 1000]

- **starvation**: 16 nodes in 4 leaves; one 1-node 8-GPU job every 50 s, each running 10 minutes
  (a steady 75 % load) for 4 hours; a 16-pod gang of 8-GPU pods arrives at 5 minutes. Reported:
  the gang's time to place, partial gangs, hours held, the small jobs' waits.
- **preemption**: 512 nodes in 16 leaves, full at the start with priority-0 work that runs for 10
  hours: 40 gangs of 8 pods and 192 single pods, every single guarded by a PodDisruptionBudget
  that allows no disruption (an inference server, say). At 30 minutes a 64-pod gang of priority
  1000 arrives. Reported: its time to place, what was evicted, by unit, the GPU-hours lost,
  gangs left partial, and the budgets violated (kube-scheduler's preemption violates a budget
  only when nothing else will do, counting violations; the extender's evictions go through the
  Eviction API and never do).
- **day**: `--generate jobs=1000,seed=1,load=1,priorities=high:0.2/low:0.8` on a generated
  2,000-node cluster with 30 % of its GPUs busy (priority 0) at the start: the day's work on top
  of that, so that the cluster fills and priorities matter. The waits per priority and gang
  size, max included, partial gangs, preemptions and the GPU-hours they lost. The two variants
  run side by side, one process each (about 3 minutes on a fast core; a higher `--day-load`
  grows the backlog kube-scheduler retries, and the run's time with it).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kubesim.scheduler import Job
from kubesim.simulate.cluster import SimCluster, load_cluster
from kubesim.simulate.metrics import measure
from kubesim.simulate.report import table
from kubesim.simulate.run import Run, Settings, Variant, simulate
from kubesim.simulate.simulation import run_variants
from kubesim.simulate.variants import build_variants
from kubesim.simulate.workload import parse_generate
from testbed.builders.nodes import hgx, node
from testbed.clustergen import ClusterSpec, generate, write_snapshot

PLAIN = Variant("kube-scheduler", None)
EXTENDER = Variant("extender", DEFAULT)
JOB_NAME = "batch.kubernetes.io/job-name"


def job(name: str, pods: int, arrival: float, duration: float, priority: int = 0) -> Job:
    return Job(
        name=name,
        namespace="team",
        members=pods,
        gpus=8,
        arrival=arrival,
        duration=duration,
        cpu_per_gpu=0,
        memory_per_gpu_gi=0,
        priority=priority,
    )


@contextmanager
def cluster_of(objects: list[Json]) -> Iterator[SimCluster]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.json"
        write_snapshot(objects, path)
        yield load_cluster(path)


def gang_class(result: dict[str, Any], priority: int, size: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        c for c in result["classes"] if (c["priority"], c["size"]) == (priority, size)
    )
    return found


def starvation() -> None:
    nodes = [
        node(f"n-{i:02d}", hgx(), labels={keys.LEAF: f"leaf-{i // 4}", keys.SPINE: "spine-0"})
        for i in range(16)
    ]
    jobs = [job(f"small-{i:03d}", 1, 50.0 * i, 600.0) for i in range(4 * 3600 // 50)]
    jobs.append(job("big", 16, 300.0, 3600.0))
    print("starvation: 16 nodes, an 8-GPU job every 50 s for 10 min, a 16-pod gang at 5 min")
    with cluster_of(nodes) as cluster:
        for variant in (EXTENDER, PLAIN):
            result = measure(simulate(cluster, jobs, variant, Settings()), jobs, cluster)
            big, small = gang_class(result, 0, "9-64"), gang_class(result, 0, "1")
            waits = small["time_to_place_seconds"]
            placed = big["time_to_place_seconds"]["max"]
            print(
                f"  {variant.name:15s} gang placed after {placed:.0f} s"
                f" (unplaced: {big['unplaced']}), partial gangs {result['partial_gangs']['gangs']}"
                f" ({result['partial_gangs']['idle_gpu_hours']:.1f} idle GPU-h), held "
                f"{big['held_hours']:.2f} h; small jobs wait p50 {waits['p50']:.0f} s, p95 "
                f"{waits['p95']:.0f} s, max {waits['max']:.0f} s; utilisation "
                f"{result['utilisation']['mean']:.1%}; wall {result['wall_seconds']:.1f} s"
            )


def budget(job_name: str) -> Json:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"{job_name}-budget", "namespace": "team"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {JOB_NAME: job_name}}},
    }


def preemption() -> None:
    spec = ClusterSpec(
        nodes=512,
        seed=4,
        nodes_per_leaf=32,
        leaves_per_spine=4,
        busy_fraction=0.0,
        rail_down_fraction=0.0,
        flaky_fraction=0.0,
        no_agent_fraction=0.0,
    )
    gangs = [job(f"train-{i:02d}", 8, float(i), 36000.0) for i in range(40)]
    singles = [job(f"single-{i:03d}", 1, 40.0 + i, 36000.0) for i in range(192)]
    guarded = [s.name for s in singles]
    urgent = job("urgent", 64, 1800.0, 3600.0, priority=1000)
    jobs = [*gangs, *singles, urgent]
    print(
        "preemption: 512 nodes full of priority-0 work (40 gangs of 8, 192 singles guarded by "
        "budgets), a 64-pod gang of priority 1000 at 30 min"
    )
    with cluster_of([*generate(spec), *(budget(n) for n in guarded)]) as cluster:
        for variant in (EXTENDER, PLAIN):
            run = simulate(cluster, jobs, variant, Settings(patience=4 * 3600.0))
            result = measure(run, jobs, cluster)
            top = gang_class(result, 1000, "65+" if urgent.members > 64 else "9-64")
            print(
                f"  {variant.name:15s} gang placed after "
                f"{top['time_to_place_seconds']['max']:.0f} s (unplaced: {top['unplaced']}); "
                f"{describe_victims(run, guarded)}; GPU-hours lost "
                f"{result['preemption']['gpu_hours_lost']:.1f}; partial gangs by preemption "
                f"{result['preemption']['partial_gangs']}; wall {result['wall_seconds']:.1f} s"
            )


def describe_victims(run: Run, guarded: list[str]) -> str:
    """The pods deleted for preemption, by their job, from the run's own records."""
    gone = Counter[str]()
    jobs = run.emulator.jobs
    assert jobs is not None
    partial = []
    for state in jobs.states():
        if state.disruptions:
            gone[state.job.name] += state.disruptions
        if state.partial_by_preemption(run.end, 1.0):
            partial.append(state.job.name)
    gang_units = sorted(n for n in gone if n.startswith("train-"))
    singles = [n for n in gone if n.startswith("single-")]
    violated = [n for n in singles if n in guarded]
    return (
        f"victims {sum(gone.values())} pods: {len(gang_units)} gangs ({len(partial)} left in "
        "part), "
        f"{len(singles)} singles; budgets violated {len(violated)}"
    )


def day(nodes: int, load: float, busy: float, jobs_count: int) -> None:
    source = f"jobs={jobs_count},seed=1,load={load:g},priorities=high:0.2/low:0.8"
    print(f"day: {nodes} nodes, {busy:.0%} of the GPUs busy at the start, --generate {source}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.json"
        write_snapshot(generate(ClusterSpec(nodes=nodes, seed=1, busy_fraction=busy)), path)
        cluster = load_cluster(path)
    jobs = parse_generate(source).stream(cluster.shape())
    started = time.perf_counter()
    variants = build_variants([], None)
    # The variants are independent: one process each, side by side.
    with ProcessPoolExecutor(len(variants)) as pool:
        runs = [pool.submit(one_variant, cluster, jobs, v, Settings()) for v in variants]
        results = [run.result() for run in runs]
    document = run_variants(cluster, jobs, f"generate {source}", [], Settings())
    document["variants"] = results
    print(table(document))
    print(f"  wall {time.perf_counter() - started:.1f} s (variants in parallel)")


def one_variant(
    cluster: SimCluster, jobs: list[Job], variant: Variant, settings: Settings
) -> dict[str, Any]:
    """One variant's measures, with a progress line on stderr every tenth of the day."""
    started, told = time.perf_counter(), [0.0]

    def progress(done: float) -> None:
        if done >= told[0] + 0.1 or done == 1.0:
            told[0] = done
            wall = time.perf_counter() - started
            print(f"  {variant.name}: {done:.0%} of the day, {wall:.0f} s", file=sys.stderr)

    run = simulate(cluster, jobs, variant, settings, progress)
    return measure(run, jobs, cluster)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["starvation", "preemption", "day"])
    parser.add_argument("--day-nodes", type=int, default=2000)
    parser.add_argument("--day-load", type=float, default=1.0, help="of the free GPU-hours")
    parser.add_argument("--day-busy", type=float, default=0.3, help="GPUs busy at the start")
    parser.add_argument("--day-jobs", type=int, default=1000)
    args = parser.parse_args()
    logging.getLogger("kube_rdma.extender").setLevel(logging.WARNING)
    if args.only in (None, "starvation"):
        starvation()
    if args.only in (None, "preemption"):
        preemption()
    if args.only in (None, "day"):
        day(args.day_nodes, args.day_load, args.day_busy, args.day_jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
