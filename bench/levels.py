"""What reading the network levels costs on a 5,000-node cluster: `auto` reading the vocabulary
from every node's labels (done once per change of the extender's cluster model, when a gang is
planned), and planning one gang of 128 x 8 GPUs with the levels of each vocabulary, the cluster
relabelled for it (testbed/clustergen/vocabularies.py), by preset and by `auto`.

Each figure is the median of `--runs` runs, in one process on whatever machine runs it.

    python -m bench.levels [--nodes 5000] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

from extender.book.reservations import Reservations
from extender.cluster.model import Cluster
from extender.engine import Engine
from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings, Planner
from extender.gangs.settings import level_settings
from extender.levels.vocabularies import auto_levels
from extender.podview import pod_view
from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes as builders
from testbed.clustergen import ClusterSpec, generate
from testbed.clustergen.vocabularies import VOCABULARIES, relabel

GANG = Gang("team-a", "bench", 128, keys.GANG)


def plan_seconds(objects: list[Json], topology: str) -> float:
    """One plan of GANG on a fresh planner, its first member filtered."""
    cluster = Cluster()
    cluster.replace_nodes([o for o in objects if o["kind"] == "Node"])
    said = {keys.GANG: GANG.name, keys.GANG_SIZE: str(GANG.size)}
    members = [builders.pod(f"bench-{i}", annotations=said) for i in range(GANG.size)]
    cluster.replace_pods([o for o in objects if o["kind"] == "Pod"] + members)
    settings = level_settings(GangSettings(), topology, None)
    book = Reservations(settings.domains[0])
    planner = Planner(cluster, Engine(cluster, lambda: DEFAULT, book), book, settings)
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]
    start = time.perf_counter()
    outcome = planner.filter(pod_view(members[0]), GANG, names)
    elapsed = time.perf_counter() - start
    assert outcome is not None
    assert outcome.passed, outcome
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    objects = generate(ClusterSpec(nodes=args.nodes, seed=7))
    labels = [o["metadata"]["labels"] for o in relabel(objects, "eks") if o["kind"] == "Node"]
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        auto_levels(labels)
        times.append(time.perf_counter() - start)
    print(f"{args.nodes} nodes; median of {args.runs} runs")
    print(f"auto_levels (EKS labels): {1000 * statistics.median(times):.1f} ms")
    for vocabulary in VOCABULARIES:
        relabelled = relabel(objects, vocabulary)
        for how in (vocabulary, "auto"):
            runs = [plan_seconds(relabelled, how) for _ in range(args.runs)]
            print(
                f"plan of 128 x 8 GPU, {vocabulary}, --topology {how}: "
                f"{1000 * statistics.median(runs):.0f} ms"
            )


if __name__ == "__main__":
    main()
