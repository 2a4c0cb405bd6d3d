"""Choosing a gang's domain and nodes from plain numbers: the exact choice, table-driven."""

from __future__ import annotations

import pytest

from extender.cluster.model import Cluster
from extender.gangs.choose import (
    CLUSTER,
    Choice,
    Fit,
    choose,
    members_fitting,
    narrowest_fit,
    no_fit_reason,
)
from extender.podview import pod_view
from kube_rdma.core import keys
from testbed.builders import nodes

LEAF, SPINE = keys.LEAF, keys.SPINE
DOMAINS = (LEAF, SPINE)


def fit(leaf: str, count: int = 1, score: float = 8.0) -> Fit:
    return Fit(count, score, {LEAF: leaf, SPINE: "spine-1"})


# leaf-a: 4 nodes taking one member each, scoring 8; leaf-b: 2 nodes, scoring 7 and 9.
FITS = {
    **{f"a{i}": fit("leaf-a") for i in range(4)},
    "b0": fit("leaf-b", score=7.0),
    "b1": fit("leaf-b", score=9.0),
}

CASES = [
    # needed, domains, choice
    (2, DOMAINS, Choice("leaf-b", ["b1", "b0"])),  # the tightest leaf, best score first
    (3, DOMAINS, Choice("leaf-a", ["a0", "a1", "a2"])),  # leaf-b is too small
    (5, DOMAINS, Choice("spine-1", ["b1", "a0", "a1", "a2", "a3"])),  # no leaf holds 5
    (6, (LEAF,), Choice(CLUSTER, ["b1", "a0", "a1", "a2", "a3", "b0"])),
    (2, (), Choice(CLUSTER, ["b1", "a0"])),  # no domain labels: the cluster
    (7, DOMAINS, None),  # the whole cluster takes 6
]


@pytest.mark.parametrize(("needed", "domains", "choice"), CASES)
def test_choose(needed: int, domains: tuple[str, ...], choice: Choice | None) -> None:
    assert choose(FITS, needed, domains) == choice


def test_a_node_taking_several_members_is_filled_before_the_next() -> None:
    fits = {"big": fit("leaf-c", count=3, score=6.0), "c1": fit("leaf-c", score=5.0)}
    assert choose(fits, 4, DOMAINS) == Choice("leaf-c", ["big", "big", "big", "c1"])


def test_between_equally_tight_domains_the_better_scoring_wins() -> None:
    fits = {
        "a0": fit("leaf-a", score=5.0),
        "a1": fit("leaf-a", score=5.0),
        "b0": fit("leaf-b", score=6.0),
        "b1": fit("leaf-b", score=5.0),
    }
    assert choose(fits, 2, DOMAINS) == Choice("leaf-b", ["b0", "b1"])


def test_nodes_without_the_label_are_only_in_the_cluster() -> None:
    fits = {"a0": fit("leaf-a"), "x": Fit(1, 10.0, {})}
    assert choose(fits, 2, DOMAINS) == Choice(CLUSTER, ["x", "a0"])


def test_narrowest_fit_is_the_most_one_leaf_takes() -> None:
    assert narrowest_fit(FITS, DOMAINS) == 4
    assert narrowest_fit(FITS, ()) == 6
    assert narrowest_fit({}, DOMAINS) == 0


def test_no_fit_reason_names_the_best_leaf_and_the_cluster() -> None:
    pod = pod_view(nodes.pod("big-0"))
    assert no_fit_reason(FITS, 10, DOMAINS, pod, "team-a/big") == (
        "gang team-a/big needs 10 x (8 GPU, 8 rails): best domain leaf-a fits 4, cluster fits 6"
    )
    assert no_fit_reason({}, 2, (), pod, "team-a/big") == (
        "gang team-a/big needs 2 x (8 GPU, 8 rails): cluster fits 0"
    )


@pytest.mark.parametrize(
    ("gpus", "rdma", "held", "count"),
    [
        (2, {"rdma/hca": 2}, {}, 4),  # 8 free GPUs and 8 RDMA units
        (2, {"rdma/hca": 2}, {"nvidia.com/gpu": 4}, 2),  # half the GPUs held by a plan
        (2, {"rdma/hca": 4}, {}, 2),  # RDMA units run out first
        (8, {"rdma/hca": 1}, {"nvidia.com/gpu": 8}, 0),
        (0, {}, {}, 1),  # asks for neither: counted once
    ],
)
def test_members_fitting(gpus: int, rdma: dict[str, int], held: dict[str, int], count: int) -> None:
    cluster = Cluster()
    cluster.replace_nodes([nodes.node("n", nodes.hgx())])
    node = cluster.node("n")
    assert node is not None
    pod = pod_view(nodes.pod("p", gpus=gpus, rdma=rdma))
    assert members_fitting(pod, node, held) == count
