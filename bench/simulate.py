"""A day of the default generated workload on a generated 2,000-node cluster, simulated: how
long each variant takes on one core.

    python -m bench.simulate [--nodes 2000] [--jobs 1000] [--seed 1] [--load 0.6]
                             [--priorities high:0.2/low:0.8] [--busy 0.0]
                             [--without-preemption]

The cluster comes from testbed/clustergen (HGX-like boards in leaves of 32 nodes, 2 % of nodes
with a rail down, 1 % with a flaky port, a share `--busy` of the GPUs taken by running pods of
priority 0); the workload is `--generate jobs=N,seed=S,load=L[,priorities=...]`
(docs/simulate.md). The extender variant runs with its default weights. Prints each variant's
wall and CPU time, the process's peak resident memory and the table `kube-rdma simulate`
prints. Past 32,768 nodes the cluster uses clustergen's wide address plan.
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubesim.scheduler import Job
from kubesim.simulate.cluster import SimCluster, load_cluster
from kubesim.simulate.report import table
from kubesim.simulate.run import Settings, Variant
from kubesim.simulate.simulation import run_variants
from kubesim.simulate.variants import build_variants
from kubesim.simulate.workload import parse_generate
from testbed.clustergen import MAX_NODES, ClusterSpec, generate, write_snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load", type=float, default=0.6)
    parser.add_argument("--priorities", help="e.g. high:0.2/low:0.8 (none: all at 0)")
    parser.add_argument("--busy", type=float, default=0.0, help="share of GPUs running pods")
    parser.add_argument(
        "--without-preemption", action="store_true", help="kube-scheduler's preemption off"
    )
    args = parser.parse_args()
    logging.getLogger("kube_rdma.extender").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.json"
        wide = args.nodes > MAX_NODES  # the address plan for up to 131,072 nodes
        spec = ClusterSpec(nodes=args.nodes, seed=1, busy_fraction=args.busy, wide_addresses=wide)
        write_snapshot(generate(spec), path)
        started, started_cpu = time.perf_counter(), time.process_time()
        cluster = load_cluster(path)
        loaded, read_cpu = time.perf_counter() - started, time.process_time() - started_cpu
        source = f"jobs={args.jobs},seed={args.seed},load={args.load:g}"
        if args.priorities:
            source += f",priorities={args.priorities}"
        jobs = parse_generate(source).stream(cluster.shape())
        source = f"generate {source}"
        settings = Settings(preemption=not args.without_preemption)
        document, cpu = run_each(cluster, jobs, source, settings)
    print(f"snapshot read in {loaded:.1f} s ({read_cpu:.1f} s CPU)")
    for variant, seconds in zip(document["variants"], cpu, strict=True):
        hours, wall = variant["simulated_hours"], variant["wall_seconds"]
        took = f"{wall:.1f} s ({seconds:.1f} s CPU)"
        print(f"{variant['name']}: {hours:.1f} simulated hours in {took}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory {peak:,.0f} MB; load average {Path('/proc/loadavg').read_text()}")
    print(table(document))
    return 0


def run_each(
    cluster: SimCluster, jobs: list[Job], source: str, settings: Settings
) -> tuple[dict[str, Any], list[float]]:
    """run_variants' document, one variant at a time so as to tell the CPU time of each (on a
    shared machine the wall time also counts the other processes)."""
    document: dict[str, Any] = {}
    cpu = []
    for variant in build_variants([], None):
        started = time.process_time()
        one = run_variants(cluster, jobs, source, [variant], settings, Told(time.perf_counter()))
        cpu.append(time.process_time() - started)
        document = {**one, "variants": [*document.get("variants", []), *one["variants"]]}
    return document, cpu


class Told:
    """Each tenth of a variant's day on stderr, with the wall time and peak memory so far: at
    100,000 nodes a run may be stopped before its end, and says how far it got."""

    def __init__(self, started: float) -> None:
        self._started, self._told = started, 0

    def __call__(self, variant: Variant, done: float) -> None:
        if int(done * 10) > self._told:
            self._told = int(done * 10)
            wall = time.perf_counter() - self._started
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"{variant.name}: {done:.0%} in {wall:.0f} s, peak {peak:,.0f} MB", file=sys.stderr
            )


if __name__ == "__main__":
    sys.exit(main())
