"""One generated cluster, labelled once in each vocabulary (kube-rdma, Topograph v1 and v0, EKS,
GKE, OCI), planned with that vocabulary's preset and with `auto`: the same gangs get the same
nodes every time."""

from __future__ import annotations

import pytest

from extender.gangs.planner import GangSettings
from extender.gangs.settings import level_settings
from kube_rdma.core.objects import Json
from testbed.clustergen import ClusterSpec, generate
from testbed.clustergen.vocabularies import VOCABULARIES, relabel
from tests.extender.gangs.fabric import Fabric, gang_members

SPEC = ClusterSpec(nodes=96, seed=7, nodes_per_leaf=8, leaves_per_spine=3, busy_fraction=0.3)
WORKLOAD = [("a", 6), ("b", 3), ("c", 12), ("d", 5), ("e", 20), ("f", 2), ("g", 30), ("h", 7)]
"""Gangs of 8-GPU members, in the order they arrive: g does not fit."""
BEST = {
    **dict.fromkeys(VOCABULARIES, "best domain leaf-003 fits 7"),
    "gke": "best domain host-gpu-00095 fits 1",
}
"""The best of the narrowest level some node carries: GKE's host, a node here."""


def plans(objects: list[Json], topology: str) -> list[list[str] | str]:
    fabric = Fabric(objects, level_settings(GangSettings(), topology, None))
    placed = []
    for name, size in WORKLOAD:
        gang, members = gang_members(name, size)
        placed.append(fabric.place(gang, members))
    return placed


@pytest.fixture(scope="module")
def cluster() -> list[Json]:
    return generate(SPEC)


@pytest.fixture(scope="module")
def expected(cluster: list[Json]) -> list[list[str] | str]:
    found = plans(cluster, "kube-rdma")
    assert all(isinstance(p, list) for p in found[:6]), found
    return found


@pytest.mark.parametrize("vocabulary", VOCABULARIES)
@pytest.mark.parametrize("how", ["preset", "auto"])
def test_each_vocabulary_plans_alike(
    cluster: list[Json], expected: list[list[str] | str], vocabulary: str, how: str
) -> None:
    relabelled = relabel(cluster, vocabulary)
    found = plans(relabelled, vocabulary if how == "preset" else "auto")
    assert [p if isinstance(p, list) else "no plan" for p in found] == [
        p if isinstance(p, list) else "no plan" for p in expected
    ]
    # A gang that fits nowhere is told so in the vocabulary's own words.
    assert (
        found[6]
        == f"gang team-a/g needs 30 x (8 GPU, 8 rails): {BEST[vocabulary]}, cluster fits 12"
    )


def test_the_wrong_preset_sees_no_levels_and_plans_differently(
    cluster: list[Json], expected: list[list[str] | str]
) -> None:
    """The test can fail: EKS labels read as Topograph leave only the whole cluster."""
    assert plans(relabel(cluster, "eks"), "topograph") != expected
