"""The plan keeper on a 6-node cluster in two leaves: the exact plan, the exact reservations, and
how they change as members are filtered, bound, left out or deleted and as time passes."""

from __future__ import annotations

import pytest

from extender.engine import FilterOutcome
from extender.gangs.identity import Gang
from extender.gangs.planner import Decision, GangSettings
from kube_rdma.core import keys
from testbed.builders import nodes
from tests.extender.gangs.two_leaves import MEMBER, NAMES, PAIR, TRIO, member, setup


def steered(node: str, reason: str) -> FilterOutcome:
    return FilterOutcome([node], {}, {n: reason for n in NAMES if n != node})


def test_the_first_member_plans_the_gang_in_the_tightest_leaf() -> None:
    s = setup(PAIR)
    reason = "gang team-a/pair has this member planned on {} (plan: 2 pods on 2 nodes in leaf-b)"
    assert s.filter(PAIR, 0) == steered("b0", reason.format("b0"))
    assert s.filter(PAIR, 1) == steered("b1", reason.format("b1"))
    assert s.filter(PAIR, 0) == steered("b0", reason.format("b0")), "a member keeps its node"
    plan = s.planner.plans[PAIR.key]
    assert (plan.domain, plan.slots, plan.assigned) == (
        "leaf-b",
        ["b0", "b1"],
        {("team-a", "pair-0"): 0, ("team-a", "pair-1"): 1},
    )
    assert s.book.by_node == {"b0": {PAIR.key: MEMBER}, "b1": {PAIR.key: MEMBER}}
    assert list(s.planner.history) == [Decision(PAIR, 2, "leaf-b", 4)]


def test_a_pod_past_the_gang_size_is_left_to_the_engine() -> None:
    s = setup(PAIR)
    s.filter(PAIR, 0)
    s.filter(PAIR, 1)
    assert s.filter(PAIR, 2) is None


def test_a_gang_that_fits_nowhere_is_unresolvable_everywhere() -> None:
    big = Gang("team-a", "big", 7, keys.GANG)
    s = setup(big)
    reason = "gang team-a/big needs 7 x (8 GPU, 8 rails): best domain leaf-a fits 4, cluster fits 6"
    assert s.filter(big, 0) == FilterOutcome([], {}, dict.fromkeys(NAMES, reason))
    assert s.planner.plans == {}
    assert s.book.by_node == {}


def test_a_second_gang_plans_around_the_first() -> None:
    s = setup(PAIR)
    s.cluster.replace_pods([member(TRIO, i) for i in range(3)] + [member(PAIR, i) for i in (0, 1)])
    s.filter(PAIR, 0)
    s.filter(TRIO, 0)
    assert s.planner.plans[TRIO.key].slots == ["a0", "a1", "a2"]
    assert s.book.by_node == {
        "b0": {PAIR.key: MEMBER},
        "b1": {PAIR.key: MEMBER},
        **{n: {TRIO.key: MEMBER} for n in ("a0", "a1", "a2")},
    }


def test_binding_turns_a_reservation_into_usage_and_a_whole_gang_needs_no_plan() -> None:
    s = setup(PAIR)
    s.filter(PAIR, 0)
    s.filter(PAIR, 1)
    s.bind(PAIR, 0, "b0")
    assert s.book.by_node == {"b1": {PAIR.key: MEMBER}}
    assert s.planner.bound_members == {PAIR.key: {("team-a", "pair-0"): "b0"}}
    s.bind(PAIR, 1, "b1")
    assert s.planner.plans == {}
    assert s.book.by_node == {}
    assert s.planner.complete(PAIR)
    assert s.filter(PAIR, 2) is None, "the gang is whole: a later pod is scheduled alone"


def test_a_plan_without_progress_expires() -> None:
    s = setup(PAIR, GangSettings(plan_timeout=60.0))
    s.filter(PAIR, 0)
    s.clock.now += 59.0
    s.planner.sweep()
    assert list(s.planner.plans) == [PAIR.key]
    s.clock.now += 2.0
    s.planner.sweep()
    assert s.planner.plans == {}
    assert s.book.by_node == {}


def test_a_planned_node_taken_meanwhile_leads_to_a_new_plan() -> None:
    s = setup(PAIR)
    s.filter(PAIR, 0)
    s.cluster.upsert_pod(nodes.pod("intruder", node_name="b1", phase="Running"))
    reason = "gang team-a/pair has this member planned on a0 (plan: 2 pods on 2 nodes in leaf-a)"
    assert s.filter(PAIR, 0) == steered("a0", reason)
    assert s.planner.plans[PAIR.key].slots == ["a0", "a1"]


def test_a_plan_judged_whole_once_still_sees_a_planned_node_taken_later() -> None:
    """The second member's filter judges the plan whole; later ones judge the nodes changed
    since: one that still fits keeps the plan, one taken has the gang planned again."""
    s = setup(PAIR)
    s.filter(PAIR, 0)
    s.filter(PAIR, 1)
    s.cluster.upsert_pod(nodes.pod("web", gpus=0, rdma={}, network=None, node_name="b0"))
    s.cluster.upsert_pod(nodes.pod("elsewhere", node_name="a3", phase="Running"))
    assert s.filter(PAIR, 1) == steered(
        "b1", "gang team-a/pair has this member planned on b1 (plan: 2 pods on 2 nodes in leaf-b)"
    )
    assert s.planner.plans[PAIR.key].slots == ["b0", "b1"]
    s.cluster.upsert_pod(nodes.pod("intruder", node_name="b1", phase="Running"))
    s.filter(PAIR, 0)
    assert s.planner.plans[PAIR.key].slots == ["a0", "a1"]


@pytest.mark.parametrize("deleted", [["trio-0"], ["trio-0", "trio-1", "trio-2"]])
def test_deleted_members_release_their_slots(deleted: list[str]) -> None:
    s = setup(TRIO)
    for i in range(3):
        s.filter(TRIO, i)
    for name in deleted:
        s.cluster.delete_pod(("team-a", name))
    s.planner.sweep()
    if len(deleted) == 3:
        assert (s.planner.plans, s.book.by_node) == ({}, {})
    else:
        plan = s.planner.plans[TRIO.key]
        assert plan.assigned == {("team-a", "trio-1"): 1, ("team-a", "trio-2"): 2}
        assert s.book.by_node == {n: {TRIO.key: MEMBER} for n in ("a0", "a1", "a2")}
