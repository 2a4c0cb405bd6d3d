"""A day of the default generated workload on a generated 2,000-node cluster, simulated: how
long each variant takes on one core.

    python -m bench.simulate [--nodes 2000] [--jobs 1000] [--seed 1] [--load 0.6]
                             [--priorities high:0.2/low:0.8] [--busy 0.0]
                             [--without-preemption]

The cluster comes from testbed/clustergen (HGX-like boards in leaves of 32 nodes, 2 % of nodes
with a rail down, 1 % with a flaky port, a share `--busy` of the GPUs taken by running pods of
priority 0); the workload is `--generate jobs=N,seed=S,load=L[,priorities=...]`
(docs/simulate.md). The extender variant runs with its default weights. Prints each variant's
wall time, the process's peak resident memory and the table `kube-rdma simulate` prints. Past
32,768 nodes the cluster uses clustergen's wide address plan.
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import tempfile
import time
from pathlib import Path

from kubesim.simulate.cluster import load_cluster
from kubesim.simulate.report import table
from kubesim.simulate.run import Settings
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
        started = time.perf_counter()
        cluster = load_cluster(path)
        loaded = time.perf_counter() - started
        source = f"jobs={args.jobs},seed={args.seed},load={args.load:g}"
        if args.priorities:
            source += f",priorities={args.priorities}"
        jobs = parse_generate(source).stream(cluster.shape())
        source = f"generate {source}"
        settings = Settings(preemption=not args.without_preemption)
        document = run_variants(cluster, jobs, source, build_variants([], None), settings)
    print(f"snapshot read in {loaded:.1f} s")
    for variant in document["variants"]:
        hours = variant["simulated_hours"]
        print(f"{variant['name']}: {hours:.1f} simulated hours in {variant['wall_seconds']:.1f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory {peak:,.0f} MB; load average {Path('/proc/loadavg').read_text()}")
    print(table(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
