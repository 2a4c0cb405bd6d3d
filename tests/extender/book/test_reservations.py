"""The book of what gang plans hold, and the read-only view the engine and locality get."""

from __future__ import annotations

from extender.book.reservations import NO_PLANS, Reservations
from extender.cluster.model import Cluster
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


def test_a_plan_fences_its_domain_under_the_narrowest_label_without_a_fence_of() -> None:
    cluster = Cluster()
    cluster.replace_nodes(
        [
            nodes.node("a0", None, labels={keys.LEAF: "leaf-a"}),
            nodes.node("c0", None, labels={keys.LEAF: "leaf-c"}),
        ]
    )
    a0, c0 = cluster.node("a0"), cluster.node("c0")
    assert a0 is not None
    assert c0 is not None
    assert (book().fenced(a0), book().fenced(c0)) == (True, False)
    held = book()
    held.release(LLAMA)
    assert held.fenced(a0) is False
    assert Reservations(None).fenced(a0) is False
    assert NO_PLANS.fenced(a0) is False
    assert (NO_PLANS.active(), NO_PLANS.held("a0"), "a0" in NO_PLANS.held_nodes) == (
        False,
        {},
        False,
    )


def test_a_plan_fences_what_its_fence_of_says() -> None:
    """The fence may name another level (an NVLink domain, under either label that names it),
    or nothing (a plan that had to go wider than its narrowest level)."""
    cliques = ("accelerator.topograph.run/domain", "nvidia.com/gpu.clique")
    fences = {LLAMA: (cliques, "uuid.1"), GPT: None}
    held = Reservations(keys.LEAF)
    held.hold(LLAMA, "uuid.1", ["a0"], ["a0"], EIGHT, fences[LLAMA])
    held.hold(GPT, "leaf-b", ["b0"], ["b0"], EIGHT, fences[GPT])
    cluster = Cluster()
    cluster.replace_nodes(
        [
            nodes.node("x", None, labels={cliques[1]: "uuid.1", keys.LEAF: "leaf-z"}),
            nodes.node("y", None, labels={cliques[0]: "uuid.1"}),
            nodes.node("z", None, labels={cliques[0]: "uuid.2", cliques[1]: "uuid.1"}),
            nodes.node("b1", None, labels={keys.LEAF: "leaf-b"}),
        ]
    )
    fenced = {n.name: held.fenced(n) for n in cluster.nodes()}
    assert fenced == {"x": True, "y": True, "z": False, "b1": False}
