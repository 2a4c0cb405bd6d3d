"""What bounds gang preemption: a backoff per gang that preempted and was not placed, a budget
of evictions per minute for the whole cluster, `preemptionPolicy: Never` (no eviction, no
hold: kube-scheduler's PodEligibleToPreemptOthers), and who may preempt across namespaces."""

from __future__ import annotations

import pytest

from extender.preemption.limits import (
    BACKOFF,
    DISRUPTION_BUDGET,
    EVICTION_BUDGET,
    Backoff,
    EvictionBudget,
)
from extender.preemption.priority import may_cross
from extender.scheduling import Scheduler
from kube_rdma.core.objects import Json
from testbed.builders.gangs import (
    NAMES,
    Clock,
    busy_everywhere,
    cluster,
    member,
    pod,
    scheduler,
)

URGENT = ("team-a", "urgent")


def test_the_backoff_doubles_up_to_its_cap_and_a_refused_round_does_not_count() -> None:
    backoff = Backoff(300, 1000)
    assert [backoff.delay(n) for n in (1, 2, 3, 4)] == [300, 600, 1000, 1000]
    assert backoff.left("g", 0) == 0
    backoff.preempted("g", 0)
    assert backoff.left("g", 100) == 200
    backoff.preempted("g", 300)
    assert (backoff.rounds("g"), backoff.left("g", 300)) == (2, 600)
    backoff.undo("g")
    assert (backoff.rounds("g"), backoff.left("g", 300)) == (1, 0)
    backoff.undo("g")  # nothing more to undo
    assert backoff.rounds("g") == 1
    backoff.prune(300 + 300 + 1000 + 1)
    assert backoff.rounds("g") == 0
    backoff.preempted("h", 0)
    backoff.undo("h")
    assert backoff.rounds("h") == 0


def test_the_budget_takes_whole_preemptions_within_a_minute() -> None:
    clock = Clock()
    budget = EvictionBudget(4, clock)
    assert budget.take(3) is None
    assert budget.take(2) == (
        "the extender's eviction budget has room for 1 more evictions this minute (of 4, "
        "--eviction-budget), and it would evict 2"
    )
    assert budget.take(5) == (
        "it would evict 5 pods, more than the extender's whole eviction budget (4 a minute, "
        "--eviction-budget)"
    )
    budget.give_back(2)
    assert budget.left() == 3
    clock.now += 60
    assert budget.left() == 4
    assert budget.refusals[EVICTION_BUDGET] == 2


def replaced_victims(s: Scheduler, nodes: list[str]) -> None:
    """The room the gang freed is taken again (their controllers recreate the victims)."""
    for n in nodes:
        s._source.cluster.upsert_pod(pod(f"again-{n}", 0, n))


async def test_a_gang_that_preempted_and_was_not_placed_backs_off() -> None:
    clock = Clock()
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    s = scheduler([*cluster(), *busy_everywhere(), *urgent], clock, backoff=300, backoff_cap=900)
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert s.evictor.evicted == 2
    clock.now += 10
    assert len(s.filter(urgent[0], NAMES).passed) == 1, "planned on the freed nodes"
    plan = s.planner.plans[URGENT]
    clock.now += 121  # the other member never comes to bind: the plan expires
    s.sweep()
    assert URGENT not in s.planner.plans
    replaced_victims(s, sorted(set(plan.slots)))
    for _ in range(3):  # rounds within the backoff add no evictions
        clock.now += 30
        s.sweep()
        answer = s.filter(urgent[0], NAMES)
        await s.evictor.drain()
    assert s.evictor.evicted == 2
    assert "preempts again in " in next(iter(answer.unresolvable.values()))
    assert s.evictor.budget.refusals[BACKOFF] == 1, "counted once per round"
    clock.now = 1000 + 301
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert s.evictor.evicted == 4, "the second round, after the backoff"
    assert s.contention.backoff.left(URGENT, clock.now) == 600


async def test_a_preemption_the_eviction_budget_cannot_take_whole_is_not_made() -> None:
    clock = Clock()
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    s = scheduler([*cluster(), *busy_everywhere(), *urgent], clock, eviction_budget=1)
    answer = s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert (s.evictor.evicted, s.holds.get(URGENT)) == (0, None)
    assert "more than the extender's whole eviction budget (1 a minute" in next(
        iter(answer.unresolvable.values())
    )
    assert s.evictor.budget.refusals[EVICTION_BUDGET] >= 1


async def test_a_preemption_whose_dry_run_is_refused_gives_its_budget_and_round_back() -> None:
    clock = Clock()
    guarded = pod("job-b0", 0, "b0")
    guarded["metadata"]["labels"] = {"app": "guarded"}
    busy = [guarded, pod("job-b1", 0, "b1")] + [pod(f"job-{n}", 5, n) for n in NAMES[:4]]
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    s = scheduler([*cluster(), *busy, *urgent], clock)
    s.evictor._disruptions = Refusing(s)
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert s.evictor.budget.left() == 64
    assert s.contention.backoff.rounds(URGENT) == 0
    assert s.evictor.budget.refusals[DISRUPTION_BUDGET] == 1


class Refusing:
    """Every eviction is refused, as by a PodDisruptionBudget."""

    def __init__(self, s: Scheduler) -> None:
        self.s = s

    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> None:
        from extender.cluster.disruptions import Refused

        raise Refused(f"pod {namespace}/{name}: Cannot evict pod")

    async def delete(self, namespace: str, name: str, uid: str) -> None:
        raise AssertionError("no PodDisruptionBudget is bypassed by default")

    async def event(self, pod: Json, reason: str, message: str) -> None:
        return None


async def test_a_never_gang_neither_preempts_nor_holds_but_is_planned_on_free_room() -> None:
    clock = Clock()
    urgent = [member("urgent", i, 4, priority=10) for i in range(4)]
    for p in urgent:
        p["spec"]["preemptionPolicy"] = "Never"
    s = scheduler([*cluster(), *busy_everywhere(), *urgent], clock, hold_after=0)
    s.filter(urgent[0], NAMES)
    clock.now += 600
    s.sweep()
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert (s.evictor.evicted, list(s.holds)) == (0, [])
    other = s.filter(pod("solo-low"), NAMES)
    assert not any("held for gang" in r for r in other.unresolvable.values())
    for n in NAMES[:4]:
        s._source.cluster.delete_pod(("team-a", f"job-{n}"))
    clock.now += 10
    assert len(s.filter(urgent[0], NAMES).passed) == 1, "free room: a plan is fine"


def in_namespace(p: Json, namespace: str) -> Json:
    p["metadata"]["namespace"] = namespace
    return p


@pytest.mark.parametrize(
    ("settings", "namespace", "priority_class", "evicted"),
    [
        ({}, "team-a", None, 2),  # kube-scheduler's rule: anyone may
        ({"across_namespaces": ("ops",)}, "team-a", None, 0),
        ({"across_namespaces": ("ops",)}, "ops", None, 2),
        ({"across_classes": ("critical",)}, "team-a", "critical", 2),
        ({"across_classes": ("critical",)}, "team-a", "other", 0),
    ],
)
async def test_who_may_preempt_across_namespaces(
    settings: dict[str, tuple[str, ...]], namespace: str, priority_class: str | None, evicted: int
) -> None:
    clock = Clock()
    victims = [in_namespace(pod(f"job-{n}", 0, n), "team-b") for n in NAMES]
    urgent = [in_namespace(member("urgent", i, 2, priority=10), namespace) for i in range(2)]
    for p in urgent:
        if priority_class:
            p["spec"]["priorityClassName"] = priority_class
    s = scheduler([*cluster(), *victims, *urgent], clock, **settings)
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert s.evictor.evicted == evicted


async def test_a_restricted_gang_still_preempts_in_its_own_namespace() -> None:
    clock = Clock()
    own = [pod(f"job-{n}", 0, n) for n in NAMES]  # team-a's
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    s = scheduler([*cluster(), *own, *urgent], clock, across_namespaces=("ops",))
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert s.evictor.evicted == 2


def test_may_cross() -> None:
    assert may_cross("a", (), (), ())
    assert not may_cross("a", ("x",), ("y",), ())
    assert may_cross("a", ("x", "y"), ("y",), ())
    assert may_cross("ops", (), (), ("ops",))


async def test_a_broken_gang_the_budget_has_no_room_for_is_torn_down_later() -> None:
    clock = Clock()
    gang = [member("g", i, 3, node=f"a{i}") for i in range(3)]
    s = scheduler([*cluster(), *gang], clock, broken_grace=60, eviction_budget=1)
    s.sweep()  # seen whole
    s._source.cluster.delete_pod(("team-a", "g-0"))
    clock.now += 30
    s.sweep()
    clock.now += 61
    s.sweep()
    await s.evictor.drain()
    assert s._source.cluster.pod("team-a", "g-1") is not None, "2 evictions, 1 in the budget"
    assert s.broken.broken(), "still judged broken: tried again at the next check"
    assert s.evictor.budget.refusals[EVICTION_BUDGET] == 1
