"""Which units a gang preempts, and in which domain: least damage, whole units, reprieves."""

from __future__ import annotations

from dataclasses import replace

from extender.preemption.priority import SharedClaim, Unit, least_damage_first
from extender.preemption.victims import Room, Slices, choose_victims, members_on

GPU = "nvidia.com/gpu"
NEED = {GPU: 8}
LEAF = "leaf"


def rooms(**free: tuple[str, int]) -> dict[str, Room]:
    """node -> (leaf, free GPUs)."""
    return {name: Room({LEAF: leaf}, {GPU: gpus}) for name, (leaf, gpus) in free.items()}


def unit(
    name: str, priority: int, nodes: dict[str, int], started: str = "2026-01-01T00:00:00Z"
) -> Unit:
    return Unit(
        name=name,
        priority=priority,
        pods=tuple(("team", f"{name}-{n}") for n in nodes),
        nodes={n: {GPU: g} for n, g in nodes.items()},
        gpus=sum(nodes.values()),
        started=started,
        gang=name.startswith("gang"),
    )


def test_members_on_counts_the_scarcest_resource() -> None:
    assert members_on({GPU: 16, "rdma/hca": 1}, {GPU: 8, "rdma/hca": 1}) == 1
    assert members_on({GPU: 16}, {GPU: 8}) == 2
    assert members_on({GPU: 4}, {GPU: 8}) == 0
    assert members_on({}, {}) == 1


def test_least_damage_first_orders_by_priority_then_gpus_then_shortest_running() -> None:
    old = unit("pod old", 0, {"a": 8}, "2026-01-01T00:00:00Z")
    young = unit("pod young", 0, {"b": 8}, "2026-01-02T00:00:00Z")
    small = unit("pod small", 0, {"c": 4})
    high = unit("pod high", 5, {"d": 1})
    assert [u.name for u in least_damage_first([high, old, young, small])] == [
        "pod small",
        "pod young",
        "pod old",
        "pod high",
    ]


def test_the_lowest_priority_units_go_first_and_are_reprieved_when_not_needed() -> None:
    # Two nodes in one leaf, both full; the gang needs one node.
    free = rooms(a0=("l1", 0), a1=("l1", 0))
    low = unit("pod low", 0, {"a0": 8})
    mid = unit("pod mid", 1, {"a1": 8})
    choice = choose_victims(free, [mid, low], NEED, 1, [LEAF])
    assert choice is not None
    assert ([u.name for u in choice.units], choice.nodes, choice.domain) == (
        ["pod low"],
        ("a0",),
        "l1",
    )


def test_a_gang_is_taken_whole_even_outside_the_domain() -> None:
    free = rooms(a0=("l1", 0), b0=("l2", 8))
    gang = unit("gang team/g", 0, {"a0": 8, "b0": 0})
    choice = choose_victims(free, [gang], NEED, 2, [LEAF])
    assert choice is not None
    assert (choice.domain, [u.name for u in choice.units]) == ("cluster", ["gang team/g"])
    assert sorted(choice.nodes) == ["a0", "b0"]


def test_units_are_taken_by_fewest_gpus_until_the_members_fit() -> None:
    # Two small units on a0 (4 GPUs free) cost fewer GPUs than the big one on a1.
    free = rooms(a0=("l1", 4), a1=("l1", 0))
    tiny = unit("pod tiny", 0, {"a0": 2})
    small = unit("pod small", 0, {"a0": 2})
    big = unit("pod big", 0, {"a1": 8})
    choice = choose_victims(free, [tiny, small, big], NEED, 2, [LEAF])
    assert choice is not None
    # tiny and small free a0; big frees a1; both nodes needed for 2 members: all three stay.
    assert sorted(u.name for u in choice.units) == ["pod big", "pod small", "pod tiny"]
    one = choose_victims(free, [tiny, small, big], NEED, 1, [LEAF])
    assert one is not None
    assert sorted(u.name for u in one.units) == ["pod small", "pod tiny"]


def test_the_domain_with_the_least_damage_wins_within_a_level() -> None:
    free = rooms(a0=("l1", 0), b0=("l2", 0))
    high = unit("pod high", 3, {"a0": 8})
    low = unit("pod low", 1, {"b0": 8})
    choice = choose_victims(free, [high, low], NEED, 1, [LEAF])
    assert choice is not None
    assert (choice.domain, [u.name for u in choice.units]) == ("l2", ["pod low"])


def test_no_choice_when_even_evicting_everything_leaves_too_little_room() -> None:
    free = rooms(a0=("l1", 0))
    assert choose_victims(free, [unit("pod x", 0, {"a0": 8})], NEED, 2, [LEAF]) is None


def test_room_already_free_needs_no_victim() -> None:
    choice = choose_victims(rooms(a0=("l1", 8)), [unit("pod x", 0, {"a0": 0})], NEED, 1, [LEAF])
    assert choice is not None
    assert (choice.units, choice.nodes) == ((), ("a0",))


def test_a_unit_taken_early_is_given_back_when_a_later_one_makes_it_needless() -> None:
    # Lowest priority first: the low unit on a1 is taken, then the mid unit on a0 that alone
    # frees a whole node; the members still fit without the low one, which is reprieved.
    free = rooms(a0=("l1", 0), a1=("l1", 4))
    low = unit("pod low", 0, {"a1": 2})
    mid = unit("pod mid", 1, {"a0": 8})
    choice = choose_victims(free, [low, mid], NEED, 1, [LEAF])
    assert choice is not None
    assert [u.name for u in choice.units] == ["pod mid"]


def test_a_claim_shared_across_units_is_freed_once_every_unit_using_it_is_taken() -> None:
    """Pods p and q share a claim holding a0's 8 GPUs (kubernetes
    pkg/controller/resourceclaim/controller.go, syncClaim: it is deallocated when the last pod
    it is reserved for is gone): taking both frees the node, and does less damage than r."""
    claim = SharedClaim("team/shared", "a0", {GPU: 8}, frozenset({"uid-p", "uid-q"}))
    p = replace(unit("pod p", 0, {}), uids=frozenset({"uid-p"}), shared=(claim,))
    q = replace(unit("pod q", 0, {}), uids=frozenset({"uid-q"}), shared=(claim,))
    r = unit("pod r", 1, {"a1": 8})
    free = rooms(a0=("l1", 0), a1=("l1", 0))
    choice = choose_victims(free, [r, q, p], NEED, 1, [LEAF])
    assert choice is not None
    assert (sorted(u.name for u in choice.units), choice.nodes) == (["pod p", "pod q"], ("a0",))
    alone = choose_victims(free, [r, p], NEED, 1, [LEAF])
    assert alone is not None
    assert ([u.name for u in alone.units], alone.nodes) == (["pod r"], ("a1",)), (
        "q stays: the shared claim is not freed"
    )


def test_a_sliced_gang_takes_what_frees_a_whole_slice_in_one_domain() -> None:
    """Two members in one slice of 2 inside one clique: evicting the two cheapest pods frees
    one node in each clique, which is not enough; the pod of priority 1 goes too, and the one
    whose node does not help is given back."""
    free = {
        n: Room({LEAF: "l1", "clique": c}, {GPU: 0})
        for n, c in [("x0", "c1"), ("x1", "c1"), ("y0", "c2"), ("y1", "c2")]
    }
    x0, y0 = unit("pod x0", 0, {"x0": 8}), unit("pod y0", 0, {"y0": 8})
    x1, y1 = unit("pod x1", 1, {"x1": 8}), unit("pod y1", 2, {"y1": 8})
    unsliced = choose_victims(free, [x0, y0, x1, y1], NEED, 2, [LEAF])
    assert unsliced is not None
    assert sorted(u.name for u in unsliced.units) == ["pod x0", "pod y0"]
    sliced = choose_victims(free, [x0, y0, x1, y1], NEED, 2, [LEAF], slices=Slices("clique", 2))
    assert sliced is not None
    assert (sorted(u.name for u in sliced.units), sorted(sliced.nodes)) == (
        ["pod x0", "pod x1"],
        ["x0", "x1"],
    )
