"""Explain of a gang member whose declared members do not all exist yet: how many exist, and
that the gang waits for the rest (a gang acts only once its members exist)."""

from __future__ import annotations

from extender.explain import gang_summary
from extender.gangs.identity import Gang
from testbed.builders.gangs import Clock, cluster, member, scheduler


def test_explain_says_how_many_members_exist_while_the_gang_waits() -> None:
    first = member("llama", 0, 8)
    s = scheduler([*cluster(), first], Clock())
    gang = s.gang(first)
    assert isinstance(gang, Gang)
    summary = gang_summary(gang, s.view(first), s.planner, s.contention, s.holds)
    assert (summary["members"], summary["waitingFor"]) == (
        {"exist": 1, "declared": 8, "vouched": False},
        f"gang {gang}: 1 of 8 members exist; waiting for the rest",
    )


def test_explain_says_nothing_of_members_once_they_all_exist() -> None:
    pods = [member("llama", i, 2) for i in range(2)]
    s = scheduler([*cluster(), *pods], Clock())
    gang = s.gang(pods[0])
    assert isinstance(gang, Gang)
    summary = gang_summary(gang, s.view(pods[0]), s.planner, s.contention, s.holds)
    assert {"members", "waitingFor"}.isdisjoint(summary)
