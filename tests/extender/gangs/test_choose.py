"""Choosing a gang's domain and nodes from plain numbers: the exact choice, table-driven."""

from __future__ import annotations

import pytest

from extender.cluster.model import Cluster
from extender.gangs.choose import (
    Choice,
    Fit,
    choose,
    choose_for_groups,
    members_fitting,
    narrowest_fit,
    no_fit_reason,
)
from extender.levels.search import CLUSTER
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


def test_a_gang_wider_than_any_leaf_spans_the_fewest_the_tightest_of_them() -> None:
    """Best score first would span all three leaves; two hold the gang, and of two the tightest
    pair leaves leaf-c, the best-scoring, whole."""
    fits = {
        **{f"a{i}": fit("leaf-a", score=8.0) for i in range(4)},
        **{f"b{i}": fit("leaf-b", score=9.0) for i in range(2)},
        **{f"c{i}": fit("leaf-c", score=10.0) for i in range(3)},
    }
    assert choose(fits, 6, (LEAF,)) == Choice(CLUSTER, ["b0", "b1", "a0", "a1", "a2", "a3"])


def test_over_spines_the_fewest_leaves_not_the_best_node_first() -> None:
    """No spine holds 5; b0 scores best, but leaf-b's one node would make three leaves."""
    fits = {
        **{f"a{i}": Fit(1, 5.0, {LEAF: "leaf-a", SPINE: "spine-1"}) for i in range(3)},
        "b0": Fit(1, 10.0, {LEAF: "leaf-b", SPINE: "spine-1"}),
        **{f"c{i}": Fit(1, 9.0, {LEAF: "leaf-c", SPINE: "spine-2"}) for i in range(2)},
    }
    assert choose(fits, 5, DOMAINS) == Choice(CLUSTER, ["c0", "c1", "a0", "a1", "a2"])


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


def pool(leaf: str, groups: set[int], count: int = 1, score: float = 8.0) -> Fit:
    return Fit(count, score, {LEAF: leaf, SPINE: "spine-1"}, frozenset(groups))


# leaf-a: a0 open to the master (group 0) only, a1-a3 to the workers (group 1) only;
# leaf-b: b0 open to both, taking two members, b1 to the workers only.
POOLS = {
    "a0": pool("leaf-a", {0}),
    **{f"a{i}": pool("leaf-a", {1}) for i in (1, 2, 3)},
    "b0": pool("leaf-b", {0, 1}, count=2, score=9.0),
    "b1": pool("leaf-b", {1}),
}

GROUPED = [
    # demands (master, workers), domains, choice
    ((1, 1), DOMAINS, Choice("leaf-b", ["b0", "b0"], [0, 1])),  # b0 takes both
    ((1, 2), DOMAINS, Choice("leaf-b", ["b0", "b0", "b1"], [0, 1, 1])),
    # leaf-b holds 3 members, but the master is then left b0 only: b0's second member goes to
    # a worker, and the other worker takes b1; with 3 workers leaf-b is too small.
    ((1, 3), DOMAINS, Choice("leaf-a", ["a0", "a1", "a2", "a3"], [0, 1, 1, 1])),
    ((2, 1), DOMAINS, Choice("leaf-b", ["b0", "b0", "b1"], [0, 0, 1])),
    # two masters: leaf-a opens one node to them, leaf-b's b0 takes both; the workers get b1
    ((2, 2), DOMAINS, Choice("spine-1", ["b0", "b0", "a1", "a2"], [0, 0, 1, 1])),
    ((3, 0), DOMAINS, Choice("spine-1", ["b0", "b0", "a0"], [0, 0, 0])),
    ((4, 1), DOMAINS, None),  # only a0 and b0 (2 members) are open to masters
]


@pytest.mark.parametrize(("demands", "domains", "choice"), GROUPED)
def test_choose_for_groups(
    demands: tuple[int, ...], domains: tuple[str, ...], choice: Choice | None
) -> None:
    assert choose_for_groups(POOLS, demands, domains) == choice


def test_the_most_constrained_group_is_placed_first() -> None:
    """Workers placed first would take b0, the only node the master may use."""
    fits = {"b0": pool("leaf-b", {0, 1}, score=9.0), "b1": pool("leaf-b", {1})}
    assert choose_for_groups(fits, (1, 1), DOMAINS) == Choice("leaf-b", ["b0", "b1"], [0, 1])
