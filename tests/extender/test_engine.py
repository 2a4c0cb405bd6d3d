"""The engine on a small realistic cluster: exact filter outcomes, priorities and explain
assessments, alone and with capacity held by a gang plan."""

from __future__ import annotations

import pytest

from extender.book.reservations import Reservations
from extender.cluster.model import Cluster
from extender.engine import Assessment, Engine, FilterOutcome
from extender.filters import Verdict
from extender.podview import pod_view
from extender.weights import DEFAULT
from kube_rdma.core import keys
from testbed.builders import nodes

LEAF = keys.LEAF
GANG = ("team-a", "llama")
NO_AGENT = (
    "no RDMA topology: no kube-rdma.io/topology annotation (is the kube-rdma agent running there?)"
)
NAMES = ["a0", "a1", "b0", "busy", "small", "no-agent"]

EIGHT = pod_view(nodes.pod("eight"))
TWO = pod_view(nodes.pod("two", gpus=2, rdma={"rdma/hca": 2}))
MEMBER = pod_view(nodes.pod("llama-0"))
# Default weights: affinity 3, rate 1, binpack 2, locality 1 (of 7). A 2-GPU pod on an empty
# 8-GPU node: affinity 10, rate 10, binpack 2.5, locality 10.
TWO_ON_EMPTY = (3 * 10 + 1 * 10 + 2 * 2.5 + 1 * 10) / 7


def cluster() -> Cluster:
    """Leaf a: two HGX nodes; leaf b: one with rail 3 down and one running a 6-GPU pod; a 4-GPU
    node and a node without the agent, in no leaf."""
    found = Cluster()
    found.replace_nodes(
        [
            nodes.node("a0", nodes.hgx(), labels={LEAF: "leaf-a"}),
            nodes.node("a1", nodes.hgx(), labels={LEAF: "leaf-a"}),
            nodes.node("b0", nodes.hgx(down=(3,)), labels={LEAF: "leaf-b"}),
            nodes.node("busy", nodes.hgx(), labels={LEAF: "leaf-b"}),
            nodes.node("small", nodes.hgx(gpus=4), gpus=4, rdma={"rdma/hca": 4}),
            nodes.node("no-agent", None),
        ]
    )
    running = nodes.pod("running", gpus=6, rdma={"rdma/hca": 6}, node_name="busy")
    found.replace_pods([running])
    return found


@pytest.fixture
def engine() -> Engine:
    return Engine(cluster(), lambda: DEFAULT)


@pytest.fixture
def book() -> Reservations:
    """A plan of gang llama holding one 8-GPU member's capacity on a0, in leaf-a."""
    held = Reservations(LEAF)
    held.hold(GANG, "leaf-a", ["a0"], ["a0"], {"nvidia.com/gpu": 8, "rdma/hca": 1})
    held.join(MEMBER.key, GANG)
    return held


def test_filter_sorts_nodes_into_passed_failed_and_unresolvable(engine: Engine) -> None:
    assert engine.filter(EIGHT, [*NAMES, "ghost"]) == FilterOutcome(
        passed=["a0", "a1"],
        failed={
            "busy": "nvidia.com/gpu: 2 of 8 free, pod needs 8",
            "ghost": "node is not in the extender's cache yet (just added?); it is retried",
        },
        unresolvable={
            "b0": "rails down: mlx5_3; 7 of 8 Ethernet ports usable, pod needs 8",
            "small": "nvidia.com/gpu: node has 4, pod needs 8",
            "no-agent": NO_AGENT,
        },
    )


def test_a_pod_without_gpu_or_rdma_passes_everywhere(engine: Engine) -> None:
    plain = pod_view(nodes.pod("web", gpus=0, rdma={}, network=None))
    assert engine.filter(plain, NAMES) == FilterOutcome(NAMES, {}, {})


def test_prioritize_is_the_weighted_mean_of_the_criteria(engine: Engine) -> None:
    assert engine.prioritize(TWO, ["a0", "b0", "busy", "ghost"]) == {
        "a0": TWO_ON_EMPTY,
        "b0": TWO_ON_EMPTY,  # 7 usable rails are plenty for 2
        "busy": (3 * 10 + 1 * 10 + 2 * 10 + 1 * 10) / 7,  # the pod fills it: binpack 10
        "ghost": 0.0,
    }


def test_explain_puts_passing_nodes_best_first_then_failures(engine: Engine) -> None:
    empty = {"affinity": 10.0, "rate": 10.0, "binpack": 2.5, "locality": 10.0}
    assert engine.explain(TWO) == [
        Assessment("busy", Verdict(True), {**empty, "binpack": 10.0}, 10.0),
        Assessment("small", Verdict(True), {**empty, "binpack": 5.0}, (30 + 10 + 10 + 10) / 7),
        Assessment("a0", Verdict(True), empty, TWO_ON_EMPTY),
        Assessment("a1", Verdict(True), empty, TWO_ON_EMPTY),
        Assessment("b0", Verdict(True), empty, TWO_ON_EMPTY),
        Assessment("no-agent", Verdict(False, NO_AGENT, resolvable=False), {}, None),
    ]


def test_capacity_a_plan_holds_is_used_for_everyone_but_its_gang(book: Reservations) -> None:
    engine = Engine(cluster(), lambda: DEFAULT, book)
    assert engine.filter(EIGHT, ["a0", "a1"]) == FilterOutcome(
        ["a1"], {"a0": "nvidia.com/gpu: 0 of 8 free, pod needs 8"}, {}
    )
    assert engine.filter(MEMBER, ["a0", "a1"], GANG).passed == ["a0", "a1"]


def test_locality_keeps_others_out_of_a_planned_leaf(book: Reservations) -> None:
    engine = Engine(cluster(), lambda: DEFAULT, book)
    # leaf-a is being filled by the plan: locality 0 there, 10 in leaf-b
    assert engine.prioritize(TWO, ["a1", "b0"]) == pytest.approx(
        {"a1": (30 + 10 + 5 + 0) / 7, "b0": TWO_ON_EMPTY}, rel=1e-12
    )
    assert engine.scores(TWO, "a1")["locality"] == 0.0


def test_locality_steers_a_member_to_its_planned_nodes(book: Reservations) -> None:
    engine = Engine(cluster(), lambda: DEFAULT, book)
    assert engine.scores(MEMBER, "a0", GANG) == {
        "affinity": 10.0,
        "rate": 10.0,
        "binpack": 10.0,
        "locality": 10.0,
    }
    assert engine.scores(MEMBER, "a1", GANG)["locality"] == 0.0
    assert engine.scores(MEMBER, "b0", GANG)["locality"] == 0.0


def test_explain_notes_rails_that_differ_in_mtu_and_nothing_else_changes() -> None:
    found = Cluster()
    found.replace_nodes(
        [
            nodes.node("mixed", nodes.hgx(mtu=9000, mtus={7: 1500})),
            nodes.node("even", nodes.hgx(mtu=9000)),
        ]
    )
    empty = {"affinity": 10.0, "rate": 10.0, "binpack": 2.5, "locality": 10.0}
    note = "MTU differs between rails: 9000 on 7 rails, 1500 on mlx5_7 (eth7)"
    assert Engine(found, lambda: DEFAULT).explain(TWO) == [
        Assessment("even", Verdict(True), empty, TWO_ON_EMPTY),
        Assessment("mixed", Verdict(True), empty, TWO_ON_EMPTY, (note,)),
    ]
