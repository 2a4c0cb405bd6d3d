"""Gang placement, with and without the extender: the same stream, side by side, simulated.

The simulator (kubesim/simulate: the emulated kube-scheduler of kubesim/scheduler driving the
extender's real Scheduler through its wire encoding, on a simulated clock) schedules a
deterministic stream of training jobs, gangs of 2 to 64 pods x 8 GPUs and singletons, arriving
and finishing, on a generated 512-node cluster in 16 leaf domains (2 % of nodes with a rail
down, 1 % with a flaky port). Once with the extender (`percentageOfNodesToScore: 100`, bind
verb, default weights), once as a plain kube-scheduler (in-tree fit, default binder, adaptive
sample). Each scheduling cycle costs `--cycle` simulated seconds. Reported per run:
- partial gangs: gangs partly bound for longer than 1 s (when the barrier opens, the members'
  binds take a few ms: those are not counted), and the most at one moment;
- GPU-hours held by partial gangs (bound members' GPUs while their gang waits);
- time to place a job (arrival to all its pods bound), p50 / p95;
- domain locality: gangs that ended in one leaf domain;
- GPU-NIC levels: for every GPU of every placed pod, its NIC's PCIe level in the best pairing
  on its node ("none" when a GPU had no usable NIC).

    python -m bench.gang [--jobs 150] [--seed 5]        (make bench)
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from extender.weights import DEFAULT
from kubesim.scheduler import Workload
from kubesim.simulate.cluster import load_cluster
from kubesim.simulate.report import table
from kubesim.simulate.run import Settings, Variant
from kubesim.simulate.simulation import run_variants
from testbed.clustergen import ClusterSpec, generate, write_snapshot

CLUSTER = ClusterSpec(nodes=512, seed=11, nodes_per_leaf=32, leaves_per_spine=4, busy_fraction=0.0)
VARIANTS = [Variant("with extender", DEFAULT), Variant("plain kube-scheduler", None)]


def run(workload: Workload, cycle: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.json"
        write_snapshot(generate(CLUSTER), path)
        cluster = load_cluster(path)
    settings = Settings(cycle=cycle, backoff_initial=0.05, backoff_max=0.5, sample_every=5.0)
    return run_variants(cluster, workload.stream(), "bench.gang", VARIANTS, settings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--interarrival", type=float, default=0.03, help="mean seconds")
    parser.add_argument("--duration", type=float, nargs=2, default=(5.0, 15.0), help="seconds")
    parser.add_argument("--cycle", type=float, default=0.005, help="seconds per cycle")
    args = parser.parse_args()
    logging.getLogger("kube_rdma.extender").setLevel(logging.WARNING)
    workload = Workload(
        seed=args.seed,
        jobs=args.jobs,
        mean_interarrival=args.interarrival,
        duration=tuple(args.duration),
        gang_fraction=0.6,
    )
    print(
        f"gang bench: {CLUSTER.nodes} nodes in {CLUSTER.nodes // CLUSTER.nodes_per_leaf} leaves, "
        f"{args.jobs} jobs (seed {args.seed})"
    )
    print(table(run(workload, args.cycle)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
