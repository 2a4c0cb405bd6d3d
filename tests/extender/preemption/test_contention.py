"""Gangs in a shared cluster, through the Scheduler in snapshot mode: holds that drain a domain
for a gang that waited too long, gang preemption by whole units, and the rest of a gang torn
down when kube-scheduler preempted one of its members."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from extender.book.records import PlanRecord
from extender.cluster.disruptions import ModelDisruptions, Refused
from extender.cluster.snapshot import SnapshotSource
from extender.engine import FilterOutcome
from extender.explain import table
from extender.gangs.planner import GangSettings
from extender.preemption.priority import ends_by
from extender.protocol import MetaVictims
from extender.scheduling import Scheduler
from extender.weights import DEFAULT
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.builders.gangs import (
    LEAF,
    NAMES,
    Clock,
    busy_everywhere,
    cluster,
    member,
    pod,
    scheduler,
)

NO_FIT = "gang team-a/big needs 4 x (8 GPU, 8 rails): cluster fits 0"


def test_a_gang_holds_the_domain_that_needs_least_freed_after_waiting() -> None:
    clock = Clock()
    big = [member("big", i, 4) for i in range(4)]
    s = scheduler([*cluster(), *busy_everywhere(), *big], clock, hold_after=60, preemption=False)
    assert s.filter(big[0], NAMES) == FilterOutcome([], {}, dict.fromkeys(NAMES, NO_FIT))
    assert not s.holds
    clock.now += 61
    held = f"{NO_FIT}; 4 nodes in leaf-a held for it while they drain"
    assert s.filter(big[1], NAMES) == FilterOutcome([], {}, dict.fromkeys(NAMES, held))
    hold = s.holds.get(("team-a", "big"))
    assert hold is not None
    assert (hold.domain, sorted(hold.nodes), hold.gpus) == ("leaf-a", ["a0", "a1", "a2", "a3"], 32)


def test_pods_of_the_same_or_lower_priority_fail_on_held_nodes_as_unresolvable() -> None:
    clock = Clock()
    big = [member("big", i, 4, priority=10) for i in range(4)]
    objects = [*cluster(), *busy_everywhere(), *big]
    s = scheduler(objects, clock, hold_after=0, preemption=False)
    s.filter(big[0], NAMES)
    for node in ["a0", "a1", "a2", "a3"]:
        s._source.cluster.delete_pod(("team-a", f"job-{node}"))
    # The occupants of leaf-a finished; a singleton of the same priority comes.
    same = pod("same", 10)
    blocked = "node held for gang team-a/big (priority 10) in leaf-a: draining"
    answer = s.filter(same, NAMES)
    assert answer.passed == []
    assert {n: r for n, r in answer.unresolvable.items()} == dict.fromkeys(
        ["a0", "a1", "a2", "a3"], blocked
    )
    higher = s.filter(pod("urgent", 11), NAMES)
    assert higher.passed == ["a0", "a1", "a2", "a3"]


def test_the_gang_is_planned_on_its_held_nodes_once_they_drained() -> None:
    clock = Clock()
    big = [member("big", i, 4) for i in range(4)]
    s = scheduler([*cluster(), *busy_everywhere(), *big], clock, hold_after=0, preemption=False)
    s.filter(big[0], NAMES)
    assert s.holds.get(("team-a", "big")) is not None
    for node in ["a0", "a1", "a2", "a3"]:
        s._source.cluster.delete_pod(("team-a", f"job-{node}"))
    clock.now += 10
    answer = s.filter(big[0], NAMES)
    assert len(answer.passed) == 1
    assert s.planner.plans[("team-a", "big")].domain == "leaf-a"
    assert not s.holds, "the plan holds the nodes now"


def test_holds_stay_within_their_share_except_for_the_oldest_highest_priority_gang() -> None:
    clock = Clock()
    first = [member("first", i, 2) for i in range(2)]
    second = [member("second", i, 2) for i in range(2)]
    objects = [*cluster(), *busy_everywhere(), *first, *second]
    s = scheduler(objects, clock, hold_after=0, hold_share=0.2, preemption=False)
    s.filter(first[0], NAMES)
    clock.now += 1
    s.filter(second[0], NAMES)
    # 48 GPUs in all, 20 % is 9: the first gang (16 GPUs) is the oldest and may go past it.
    assert s.holds.get(("team-a", "first")) is not None
    assert s.holds.get(("team-a", "second")) is None


async def test_a_higher_priority_gang_preempts_whole_units_and_then_is_placed() -> None:
    clock = Clock()
    victims = [member("low", i, 2, node=f"b{i}") for i in range(2)]
    others = [pod(f"job-{n}", 5, n) for n in ["a0", "a1", "a2", "a3"]]
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    s = scheduler([*cluster(), *others, *victims, *urgent], clock)
    answer = s.filter(urgent[0], NAMES)
    expected = (
        "gang team-a/urgent needs 2 x (8 GPU, 8 rails): cluster fits 0; "
        "preempting gang team-a/low in leaf-b; 2 nodes held until they are gone"
    )
    assert answer == FilterOutcome([], {}, dict.fromkeys(NAMES, expected))
    await s.evictor.drain()
    assert s._source.cluster.pod("team-a", "low-0") is None
    assert s._source.cluster.pod("team-a", "low-1") is None
    assert s._source.cluster.pod("team-a", "job-a0") is not None, "the cheaper unit is spared"
    clock.now += 10
    placed = s.filter(urgent[0], NAMES)
    assert placed.passed in (["b0"], ["b1"])
    assert (s.evictor.preemptions, s.evictor.evicted) == (1, 2)


async def test_preemption_never_takes_part_of_a_gang_or_pods_of_the_same_priority() -> None:
    clock = Clock()
    # The low gang spans leaves; a same-priority pod sits on b1.
    victims = [member("low", 0, 2, node="b0"), member("low", 1, 2, node="a0")]
    peers = [pod("peer", 10, "b1")] + [pod(f"job-{n}", 10, n) for n in ["a1", "a2", "a3"]]
    urgent = [member("urgent", i, 1 + 1, priority=10) for i in range(2)]
    s = scheduler([*cluster(), *peers, *victims, *urgent], clock)
    s.filter(urgent[0], NAMES)
    hold = s.holds.get(("team-a", "urgent"))
    assert hold is not None
    assert [name for name, _ in hold.units] == ["gang team-a/low"]
    assert hold.victims == {("team-a", "low-0"), ("team-a", "low-1")}
    await s.evictor.drain()


@pytest.mark.parametrize("policy", ["Never"])
def test_a_gang_whose_members_never_preempt_only_waits(policy: str) -> None:
    clock = Clock()
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    for p in urgent:
        p["spec"]["preemptionPolicy"] = policy
    s = scheduler([*cluster(), *busy_everywhere(), *urgent], clock, hold_after=600)
    s.filter(urgent[0], NAMES)
    assert not s.holds


async def test_a_gang_member_preempted_by_kube_scheduler_takes_the_rest_of_its_gang() -> None:
    clock = Clock()
    gang = [member("g", i, 3, node=f"a{i}") for i in range(3)]
    s = scheduler([*cluster(), *gang], clock)
    gone = dict(gang[0])
    gone["status"] = {
        "phase": "Running",
        "conditions": [
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": "rdma-scheduler: preempting to accommodate a higher priority pod",
            }
        ],
    }
    s._source.cluster.delete_pod(("team-a", "g-0"), gone)
    s.sweep()
    await s.evictor.drain()
    assert [s._source.cluster.pod("team-a", f"g-{i}") for i in (1, 2)] == [None, None]
    assert s.evictor.evicted == 2


async def test_a_member_deleted_for_another_reason_leaves_its_gang_alone() -> None:
    clock = Clock()
    gang = [member("g", i, 3, node=f"a{i}") for i in range(3)]
    s = scheduler([*cluster(), *gang], clock)
    s._source.cluster.delete_pod(("team-a", "g-0"), gang[0])
    s.sweep()
    await s.evictor.drain()
    assert s._source.cluster.pod("team-a", "g-1") is not None


def test_explain_shows_the_wait_the_hold_and_the_held_nodes() -> None:
    clock = Clock()
    big = [member("big", i, 4) for i in range(4)]
    solo = pod("solo")
    objects = [*cluster(), *busy_everywhere(), *big, solo]
    s = scheduler(objects, clock, hold_after=60, preemption=False)
    s.filter(big[0], NAMES)
    clock.now += 90
    s.filter(big[0], NAMES)
    body = s.explain("team-a", "big-1")
    assert body is not None
    assert body["gang"]["waiting"] == {
        "priority": 0,
        "seconds": 90.0,
        "reason": f"{NO_FIT}; 4 nodes in leaf-a held for it while they drain",
    }
    assert body["gang"]["hold"] == {
        "domain": "leaf-a",
        "nodes": ["a0", "a1", "a2", "a3"],
        "gpus": 32,
        "victims": [],
    }
    assert table(body).splitlines()[1:4] == [
        f"gang team-a/big of 4 (kube-rdma.io/gang): no plan now: {NO_FIT}",
        f"waiting 90s at priority 0: {NO_FIT}; 4 nodes in leaf-a held for it while they drain",
        "holding 4 nodes in leaf-a (32 GPUs)",
    ]
    other = s.explain("team-a", "solo")
    assert other is not None
    held = [n for n in other["nodes"] if n["node"].startswith("a")]
    assert {(n["verdict"], n["reason"]) for n in held} == {
        ("unresolvable", "node held for gang team-a/big (priority 0) in leaf-a: draining")
    }
    assert other["summary"] == {"pass": 0, "fail": 2, "unresolvable": 4}


def test_room_a_waiting_higher_priority_gang_needs_is_set_aside_from_lower_ones() -> None:
    clock = Clock()
    high = [member("high", i, 4, priority=10) for i in range(4)]
    low = [member("low", i, 2) for i in range(2)]
    objects = [*cluster(), *busy_everywhere(), *high, *low]
    s = scheduler(objects, clock, hold_after=600, preemption=False)
    s.filter(high[0], NAMES)  # no room: it waits
    for node in ["a0", "a1", "a2", "a3"]:
        s._source.cluster.delete_pod(("team-a", f"job-{node}"))
    # kube-scheduler happens to try the low gang first (the high one is in backoff).
    refused = s.filter(low[0], NAMES)
    assert refused.passed == []
    assert s.planner.plans.keys() == set()
    placed = s.filter(high[0], NAMES)
    assert len(placed.passed) == 1
    assert s.planner.plans[("team-a", "high")].domain == "leaf-a"


class SharedRecords:
    """Records two extender processes share, each seeing the other's writes as foreign."""

    def __init__(self) -> None:
        self.saved_: dict[Any, PlanRecord] = {}
        self.writes = {"a": 0, "b": 0}

    def of(self, who: str) -> Any:
        shared = self

        class View:
            def ready(self) -> bool:
                return True

            def saved(self) -> dict[Any, PlanRecord]:
                return shared.saved_

            @property
            def foreign_changes(self) -> int:
                return sum(n for w, n in shared.writes.items() if w != who)

            def put(self, record: PlanRecord) -> None:
                shared.saved_[record.gang] = record
                shared.writes[who] += 1

            def remove(self, gang: Any) -> None:
                shared.saved_.pop(gang, None)
                shared.writes[who] += 1

            async def flush(self, gang: Any) -> bool:
                return True

            async def run(self) -> None:
                await asyncio.Event().wait()

        return View()


class Stalled:
    """Disruptions of a leader that dies before its evictions are answered."""

    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> None:
        await asyncio.Event().wait()

    async def delete(self, namespace: str, name: str, uid: str) -> None:
        await asyncio.Event().wait()

    async def event(self, pod: Json, reason: str, message: str) -> None:
        return None


async def test_a_preemption_in_flight_is_finished_by_the_extender_that_serves_next() -> None:
    clock = Clock()
    victims = [member("low", i, 2, node=f"b{i}") for i in range(2)]
    others = [pod(f"job-{n}", 5, n) for n in ["a0", "a1", "a2", "a3"]]
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    solo_pod = pod("solo")  # in the cache: verbs for pods it lacks take nothing over
    objects = [*cluster(), *others, *victims, *urgent, solo_pod]
    shared = SharedRecords()
    first_source = SnapshotSource(objects)
    first = Scheduler(
        first_source,
        lambda: DEFAULT,
        GangSettings(),
        ("nvidia.com/gpu",),
        ("rdma/*",),
        shared.of("a"),
        clock=clock,
        disruptions=Stalled(),
    )
    first.filter(urgent[0], NAMES)
    record = shared.saved_[("team-a", "urgent")]
    assert record.hold is not None
    assert record.slots == ("b0", "b1")
    # The first leader dies with its evictions unanswered; the next one serves.
    source = SnapshotSource(objects)
    second = Scheduler(
        source,
        lambda: DEFAULT,
        GangSettings(),
        ("nvidia.com/gpu",),
        ("rdma/*",),
        shared.of("b"),
        clock=clock,
        disruptions=ModelDisruptions(source.cluster),
    )
    solo = second.filter(solo_pod, NAMES)
    assert solo.unresolvable.keys() >= {"b0", "b1"}, "the held nodes stay held"
    await second.evictor.drain()
    assert [source.cluster.pod("team-a", f"low-{i}") for i in (0, 1)] == [None, None]
    second.sweep()
    clock.now += 10
    placed = second.filter(urgent[0], NAMES)
    assert placed.passed in (["b0"], ["b1"])


async def test_a_running_gang_short_of_members_past_the_grace_is_torn_down() -> None:
    clock = Clock()
    gang = [member("g", i, 3, node=f"a{i}") for i in range(3)]
    s = scheduler([*cluster(), *gang], clock, broken_grace=60)
    s.sweep()  # seen whole
    s._source.cluster.delete_pod(("team-a", "g-0"))  # evicted by a drain, say
    clock.now += 30
    s.sweep()
    assert s.broken.broken() == {("team-a", "g"): clock.now}
    clock.now += 59
    s.sweep()
    await s.evictor.drain()
    assert s._source.cluster.pod("team-a", "g-1") is not None, "within the grace"
    clock.now += 11
    s.sweep()
    await s.evictor.drain()
    assert [s._source.cluster.pod("team-a", f"g-{i}") for i in (1, 2)] == [None, None]


async def test_a_gang_made_whole_again_within_the_grace_is_left_alone() -> None:
    clock = Clock()
    gang = [member("g", i, 3, node=f"a{i}") for i in range(3)]
    s = scheduler([*cluster(), *gang], clock, broken_grace=60)
    s.sweep()
    s._source.cluster.delete_pod(("team-a", "g-0"))
    clock.now += 30
    s.sweep()
    s._source.cluster.upsert_pod(member("g", 0, 3, node="b0"))  # its operator replaced it
    clock.now += 60
    s.sweep()
    assert s.broken.broken() == {}
    assert s._source.cluster.pod("team-a", "g-1") is not None


def test_without_a_grace_broken_gangs_are_left_alone() -> None:
    clock = Clock()
    gang = [member("g", i, 3, node=f"a{i}") for i in range(3)]
    s = scheduler([*cluster(), *gang], clock)
    s.sweep()
    s._source.cluster.delete_pod(("team-a", "g-0"))
    clock.now += 3600
    s.sweep()
    assert s.broken.broken() == {}


def test_two_waiting_gangs_never_hold_the_same_node() -> None:
    clock = Clock()
    first = [member("first", i, 4) for i in range(4)]
    second = [member("second", i, 4) for i in range(4)]
    objects = [*cluster(), *busy_everywhere(), *first, *second]
    s = scheduler(objects, clock, hold_after=0, preemption=False)
    s.filter(first[0], NAMES)
    clock.now += 1
    s.filter(second[0], NAMES)
    held = s.holds.get(("team-a", "first"))
    assert held is not None
    assert sorted(held.nodes) == ["a0", "a1", "a2", "a3"]
    # Only leaf-a holds 4 members, and it is taken: the second gang waits without a hold.
    assert s.holds.get(("team-a", "second")) is None


def test_a_higher_priority_gang_takes_a_lower_ones_hold() -> None:
    clock = Clock()
    low = [member("low", i, 4) for i in range(4)]
    high = [member("high", i, 4, priority=10) for i in range(4)]
    objects = [*cluster(), *busy_everywhere(10), *low, *high]
    s = scheduler(objects, clock, hold_after=0, preemption=False)
    s.filter(low[0], NAMES)
    assert s.holds.get(("team-a", "low")) is not None
    clock.now += 1
    s.filter(high[0], NAMES)
    hold = s.holds.get(("team-a", "high"))
    assert hold is not None
    assert sorted(hold.nodes) == ["a0", "a1", "a2", "a3"]
    assert s.holds.get(("team-a", "low")) is None


def test_a_node_nominated_for_a_higher_priority_pod_is_not_planned_for_a_lower_gang() -> None:
    clock = Clock()
    gang = [member("g", i, 2) for i in range(2)]
    nominee = pod("urgent", 1000)
    nominee["status"] = {"phase": "Pending", "nominatedNodeName": "b0"}
    busy = [pod(f"job-{n}", 0, n) for n in ["a0", "a1", "a2", "a3"]]
    s = scheduler([*cluster(), *busy, *gang, nominee], clock, preemption=False)
    refused = s.filter(gang[0], NAMES)
    assert refused.passed == []
    s._source.cluster.upsert_pod({**nominee, "status": {"phase": "Pending"}})
    assert len(s.filter(gang[0], NAMES).passed) == 1, "the nomination cleared, b0 and b1 fit"


class Guarded(ModelDisruptions):
    """Evictions as on the model, but a budget guards `guarded`."""

    def __init__(self, cluster: Any, guarded: str) -> None:
        super().__init__(cluster)
        self.guarded = guarded

    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> None:
        if name == self.guarded:
            raise Refused(f"pod {namespace}/{name}: Cannot evict pod as it would violate ...")
        await super().evict(namespace, name, uid, dry_run)


async def test_a_unit_a_budget_protects_is_left_out_and_another_preempted() -> None:
    clock = Clock()
    cheap = [pod("guarded", 0, "b0"), pod("other", 0, "b1")]
    busy = [pod(f"job-{n}", 5, n) for n in ["a0", "a1", "a2", "a3"]]
    urgent = [member("urgent", 0, 2, priority=10), member("urgent", 1, 2, priority=10)]
    source = SnapshotSource([*cluster(), *cheap, *busy, *urgent])
    s = Scheduler(
        source,
        lambda: DEFAULT,
        GangSettings(),
        ("nvidia.com/gpu",),
        ("rdma/*",),
        clock=clock,
        disruptions=Guarded(source.cluster, "guarded"),
    )
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    assert source.cluster.pod("team-a", "guarded") is not None
    assert s.holds.get(("team-a", "urgent")) is None
    waiting = s.contention.waiting[("team-a", "urgent")]
    assert waiting.reason.startswith("preemption refused: pod team-a/guarded: Cannot evict")
    s.filter(urgent[0], NAMES)
    await s.evictor.drain()
    hold = s.holds.get(("team-a", "urgent"))
    assert hold is not None
    # Without the guarded pod leaf-b cannot take the gang: leaf-a's dearer pods go instead.
    assert (hold.domain, len(hold.units)) == ("leaf-a", 2)
    assert source.cluster.pod("team-a", "guarded") is not None
    assert source.cluster.pod("team-a", "other") is not None


async def test_a_gang_kube_scheduler_never_sends_is_decided_from_the_pod_cache() -> None:
    # The cluster is full: kube-scheduler's own filters find no node for the members, so the
    # extender's filter is never called for them. Its upkeep finds them in its cache.
    clock = Clock()
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    for p in urgent:
        p["spec"]["schedulerName"] = "rdma-scheduler"
    others = [member("other", i, 2, priority=10) for i in range(2)]  # another scheduler's
    s = scheduler([*cluster(), *busy_everywhere(), *urgent, *others], clock)
    s.sweep()
    hold = s.holds.get(("team-a", "urgent"))
    assert hold is not None
    assert len(hold.victims) == 2
    assert s.holds.get(("team-a", "other")) is None
    await s.evictor.drain()


async def test_kube_schedulers_preempt_call_for_a_member_decides_its_gang() -> None:
    clock = Clock()
    urgent = [member("urgent", i, 2, priority=10) for i in range(2)]
    s = scheduler([*cluster(), *busy_everywhere(), *urgent], clock, hold_after=0)
    assert s.preempt(urgent[0], {"a0": MetaVictims(("uid",))}) == {}
    hold = s.holds.get(("team-a", "urgent"))
    assert hold is not None
    assert hold.units, "it preempts"
    await s.evictor.drain()


def running_since(name: str, node: str, start: str, deadline: int | None = None) -> Json:
    found = pod(name, node=node)
    found["status"]["startTime"] = start
    if deadline is not None:
        found["spec"]["activeDeadlineSeconds"] = deadline
    return found


@pytest.mark.parametrize(
    ("a_deadline", "c_deadline", "held"),
    [
        (None, None, "leaf-c"),  # no deadlines: the youngest occupants (leaf-c started later)
        (7200, None, "leaf-a"),  # leaf-a must be drained in 2 h at the latest; leaf-c unknown
        (7200, 600, "leaf-c"),  # both known: leaf-c by 12:10, leaf-a by 14:00
        (None, 600, "leaf-c"),
    ],
)
def test_a_hold_drains_the_domain_whose_deadlines_end_soonest(
    a_deadline: int | None, c_deadline: int | None, held: str
) -> None:
    """Equal GPUs to free and equal priority: the occupants' activeDeadlineSeconds, where every
    one has it, bound when the domain is drained, and the soonest-drained domain is held; where
    an end is unknown, the youngest occupants' domain is."""
    clock = Clock()
    leaves = [
        nodes.node(f"{leaf[-1]}{i}", nodes.hgx(), labels={LEAF: leaf})
        for leaf in ("leaf-a", "leaf-c")
        for i in range(4)
    ]
    busy = [
        running_since(f"job-a{i}", f"a{i}", "2026-12-02T12:00:00Z", a_deadline) for i in range(4)
    ]
    busy += [
        running_since(f"job-c{i}", f"c{i}", "2026-12-02T12:00:30Z", c_deadline) for i in range(4)
    ]
    big = [member("big", i, 4) for i in range(4)]
    s = scheduler([*leaves, *busy, *big], clock, hold_after=0, preemption=False)
    s.filter(big[0], [n["metadata"]["name"] for n in leaves])
    hold = s.holds.get(("team-a", "big"))
    assert hold is not None
    assert hold.domain == held


def test_a_pod_ends_by_its_start_plus_its_active_deadline() -> None:
    assert ends_by(running_since("p", "a0", "2026-12-02T23:59:00Z", 120)) == "2026-12-03T00:01:00Z"
    assert (
        ends_by(running_since("p", "a0", "2026-12-02T23:59:00+00:00", 60)) == "2026-12-03T00:00:00Z"
    )
    assert ends_by(running_since("p", "a0", "2026-12-02T23:59:00Z")) is None
    pending = pod("pending")
    pending["spec"]["activeDeadlineSeconds"] = 60
    assert ends_by(pending) is None  # not started: no start to count from
    assert ends_by(running_since("p", "a0", "yesterday", 60)) is None
