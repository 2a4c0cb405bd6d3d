"""Slices placed in rank order, each in the tightest domain of its level that still holds it."""

from __future__ import annotations

from extender.gangs.choose import Fit, choose_in
from extender.gangs.slices import cut, slice_fill
from extender.levels.search import Search

RACK = "rack"


def fits(layout: dict[str, tuple[str, int]], score: float = 5.0) -> dict[str, Fit]:
    """node -> (rack, members it takes)"""
    return {
        name: Fit(count, score, {RACK: rack, "zone": "z"}) for name, (rack, count) in layout.items()
    }


def test_each_slice_takes_the_tightest_rack_that_holds_it() -> None:
    layout = {"a0": ("a", 2), "a1": ("a", 2), "b0": ("b", 2), "c0": ("c", 1), "c1": ("c", 2)}
    # Slices of 2: slice 0 to b (room 2), slice 1 to c (room 3), slice 2 to c's rest? c has 1
    # left, too few: a (room 4).
    assert slice_fill(sorted(layout), fits(layout), RACK, cut(6, 2)) == [
        "b0",
        "b0",
        "c1",
        "c1",
        "a0",
        "a0",
    ]


def test_a_slice_no_rack_holds_fails_the_domain() -> None:
    layout = {"a0": ("a", 1), "b0": ("b", 1)}
    assert slice_fill(sorted(layout), fits(layout), RACK, cut(2, 2)) is None


def test_a_short_last_slice() -> None:
    layout = {"a0": ("a", 4), "b0": ("b", 1)}
    assert slice_fill(sorted(layout), fits(layout), RACK, cut(5, 4)) == ["a0"] * 4 + ["b0"]


def test_the_gang_domain_must_hold_every_slice() -> None:
    """Zone z1 has room for 4 but in racks of 1 and 3; zone z2's racks of 2 and 2 hold two
    slices of 2, so the sliced gang goes to z2 though z1 is as tight."""
    layout = {
        "p0": Fit(1, 5.0, {RACK: "p", "zone": "z1"}),
        "q0": Fit(3, 5.0, {RACK: "q", "zone": "z1"}),
        "r0": Fit(2, 5.0, {RACK: "r", "zone": "z2"}),
        "s0": Fit(2, 5.0, {RACK: "s", "zone": "z2"}),
    }
    choice = choose_in(
        layout, [4], Search(("zone",), cluster=False, slice_level=RACK, slice_size=2)
    )
    assert choice is not None
    assert (choice.domain, choice.nodes) == ("z2", ["r0", "r0", "s0", "s0"])
    unsliced = choose_in(layout, [4], Search(("zone",), cluster=False))
    assert unsliced is not None
    assert unsliced.domain == "z1"


def test_a_required_level_never_falls_back_to_the_cluster() -> None:
    layout = {"a0": ("a", 2), "b0": ("b", 2)}
    assert choose_in(fits(layout), [3], Search((RACK,), cluster=False)) is None
    widened = choose_in(fits(layout), [3], Search((RACK,), cluster=True))
    assert widened is not None
    assert widened.domain == "cluster"
