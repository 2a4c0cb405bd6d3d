"""The book of what gang plans hold, and the read-only view the engine and locality get."""

from __future__ import annotations

from extender.cluster.model import Cluster
from extender.gangs.reservations import NO_PLANS, Reservations
from kube_rdma.core import keys
from testbed.builders import nodes

LLAMA, GPT = ("team-a", "llama"), ("team-b", "gpt")
EIGHT = {"nvidia.com/gpu": 8, "rdma/hca": 1}


def book() -> Reservations:
    held = Reservations(keys.LEAF)
    held.hold(LLAMA, "leaf-a", ["a0", "a0", "a1"], ["a0", "a1"], {"nvidia.com/gpu": 4})
    held.hold(GPT, "leaf-b", ["a1", "b0"], ["a1", "b0"], EIGHT)
    held.join(("team-a", "llama-0"), LLAMA)
    return held


def test_what_plans_hold_per_node_and_for_whom() -> None:
    held = book()
    assert held.by_node == {
        "a0": {LLAMA: {"nvidia.com/gpu": 4}},
        "a1": {LLAMA: {"nvidia.com/gpu": 4}, GPT: EIGHT},
        "b0": {GPT: EIGHT},
    }
    assert held.held("a1") == {"nvidia.com/gpu": 12, "rdma/hca": 1}
    assert held.held("a1", LLAMA) == EIGHT, "a gang does not count what it holds itself"
    assert held.held("c0") == {}
    assert "b0" in held.held_nodes
    assert (held.active(), held.domains()) == (True, frozenset({"leaf-a", "leaf-b"}))


def test_a_member_bound_settles_what_was_held_for_it_on_its_node() -> None:
    held = Reservations(keys.LEAF)
    held.hold(LLAMA, "leaf-a", ["a0", "a0", "a1"], ["a0", "a0", "a1"], {"nvidia.com/gpu": 4})
    held.hold(GPT, "leaf-b", ["a1"], ["a1"], EIGHT)
    held.settle(LLAMA, "a0", {"nvidia.com/gpu": 4})
    assert held.by_node == {
        "a0": {LLAMA: {"nvidia.com/gpu": 4}},
        "a1": {LLAMA: {"nvidia.com/gpu": 4}, GPT: EIGHT},
    }
    held.settle(LLAMA, "a0", {"nvidia.com/gpu": 4})
    held.settle(GPT, "a1", EIGHT)
    held.settle(GPT, "b9", EIGHT)  # nothing held there: nothing to settle
    assert held.by_node == {"a1": {LLAMA: {"nvidia.com/gpu": 4}}}


def test_members_and_planned_nodes() -> None:
    held = book()
    assert held.member_gang(("team-a", "llama-0")) == LLAMA
    assert held.member_gang(("team-a", "solo")) is None
    assert held.planned_nodes(LLAMA) == frozenset({"a0", "a1"})
    assert held.planned_nodes(("team-c", "none")) is None


def test_holding_again_replaces_and_release_forgets_everything() -> None:
    held = book()
    held.hold(LLAMA, "leaf-a", ["a0", "a0", "a1"], ["a1"], {"nvidia.com/gpu": 4})
    assert held.by_node == {"a1": {LLAMA: {"nvidia.com/gpu": 4}, GPT: EIGHT}, "b0": {GPT: EIGHT}}
    held.release(LLAMA)
    assert held.by_node == {"a1": {GPT: EIGHT}, "b0": {GPT: EIGHT}}
    assert held.member_gang(("team-a", "llama-0")) is None
    held.release(GPT)
    assert (held.by_node, held.active(), held.domains()) == ({}, False, frozenset())


def test_a_node_is_in_the_domain_its_narrowest_label_names() -> None:
    cluster = Cluster()
    cluster.replace_nodes([nodes.node("a0", None, labels={keys.LEAF: "leaf-a"})])
    node = cluster.node("a0")
    assert node is not None
    assert book().domain_of(node) == "leaf-a"
    assert Reservations(None).domain_of(node) is None
    assert NO_PLANS.domain_of(node) is None
    assert (NO_PLANS.active(), NO_PLANS.held("a0"), "a0" in NO_PLANS.held_nodes) == (
        False,
        {},
        False,
    )
