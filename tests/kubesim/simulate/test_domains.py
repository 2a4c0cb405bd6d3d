"""simulate's count of gangs inside one domain at each level and inside one NVLink domain, in
the cluster's own vocabulary; and a whole run on an EKS-labelled NVL72-style cluster."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import main
from kubesim.simulate.domains import gangs_in_one_domain
from testbed.clustergen import ClusterSpec, generate, write_snapshot
from testbed.clustergen.vocabularies import nvl72, relabel

LAYERS = [f"topology.k8s.aws/network-node-layer-{n}" for n in (3, 2, 1)]


def test_counts_per_level_in_the_clusters_vocabulary() -> None:
    nodes = relabel(nvl72(2), "eks")
    gangs = [
        tuple(f"gb-0-{i:02d}" for i in range(16)),  # clique 0, leaf 0
        tuple(f"gb-0-{i:02d}" for i in range(10, 18)),  # clique 0, leaves 0 and 1
        ("gb-0-17", "gb-1-00"),  # two cliques, leaf 1
        ("gb-1-17",),  # leaf 2, alone
    ]
    assert gangs_in_one_domain(gangs, nodes) == {
        "nvlink": 3,
        LAYERS[0]: 3,
        LAYERS[1]: 4,
        LAYERS[2]: 4,
    }


def test_simulate_reports_each_level_in_an_eks_labelled_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The generator's gangs take whole 8-GPU nodes: an HGX cluster, in EKS's labels."""
    path = tmp_path / "eks.json"
    spec = ClusterSpec(nodes=16, seed=2, nodes_per_leaf=4, leaves_per_spine=2, busy_fraction=0.0)
    write_snapshot(relabel(generate(spec), "eks"), path)
    argv = ["simulate", "--cluster", str(path), "--generate", "jobs=6,seed=5", "--json"]
    assert main(argv) == 0
    variants = orjson.loads(capsys.readouterr().out)["variants"]
    variant = variants[-1]  # the extender's

    def each(level: str) -> list[tuple[Json, int]]:
        return [(v, v["gangs_in_one_domain_by_level"][level]) for v in variants]

    by_level = variant["gangs_in_one_domain_by_level"]
    assert list(by_level) == LAYERS
    assert variant["gangs_placed"] > 0
    assert by_level[LAYERS[2]] == variant["gangs_placed"], "one zone: every gang is inside it"
    assert by_level[LAYERS[0]] <= by_level[LAYERS[1]] <= by_level[LAYERS[2]]
    assert main(argv[:-1]) == 0
    rows = [
        re.split(r"\s{2,}", line)
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("gangs in one ") and "leaf" not in line
    ]
    assert rows == [
        [f"gangs in one {level}", *(f"{n} of {v['gangs_placed']}" for v, n in each(level))]
        for level in LAYERS
    ]
