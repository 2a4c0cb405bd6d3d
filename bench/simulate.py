"""A day of the default generated workload on a generated 2,000-node cluster, simulated: how
long each variant takes on one core.

    python -m bench.simulate [--nodes 2000] [--jobs 1000] [--seed 1]

The cluster comes from testbed/clustergen (HGX-like boards in leaves of 32 nodes, 2 % of nodes
with a rail down, 1 % with a flaky port, no pods running); the workload is
`--generate jobs=N,seed=S` (docs/simulate.md). The extender variant runs with its default
weights. Prints each variant's wall time and the table `kube-rdma simulate` prints.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

from kubesim.simulate.cluster import load_cluster
from kubesim.simulate.report import table
from kubesim.simulate.run import Settings
from kubesim.simulate.simulation import run_variants
from kubesim.simulate.variants import build_variants
from kubesim.simulate.workload import Generated
from testbed.clustergen import ClusterSpec, generate, write_snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.getLogger("kube_rdma.extender").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.json"
        write_snapshot(generate(ClusterSpec(nodes=args.nodes, seed=1, busy_fraction=0.0)), path)
        started = time.perf_counter()
        cluster = load_cluster(path)
        loaded = time.perf_counter() - started
        generated = Generated(jobs=args.jobs, seed=args.seed)
        jobs = generated.stream(cluster.shape())
        source = f"generate jobs={args.jobs},seed={args.seed}"
        document = run_variants(cluster, jobs, source, build_variants([], None), Settings())
    print(f"snapshot read in {loaded:.1f} s")
    for variant in document["variants"]:
        hours = variant["simulated_hours"]
        print(f"{variant['name']}: {hours:.1f} simulated hours in {variant['wall_seconds']:.1f} s")
    print(table(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
