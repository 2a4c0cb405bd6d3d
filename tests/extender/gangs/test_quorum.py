"""A gang acts (is planned, holds, preempts) only once its declared members exist, as
scheduler-plugins' coscheduling PreFilter rejects a pod whose PodGroup has fewer than minMember
pods ("pre-filter pod ... cannot find enough sibling pods"); an owning workload vouches for
members its controller has not created yet; no gang may declare more than --max-gang-size."""

from __future__ import annotations

import pytest

from extender.engine import FilterOutcome
from extender.gangs.identity import Gang
from extender.gangs.quorum import Presence
from extender.protocol import MetaVictims
from extender.scheduling import NotReady
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.builders.gangs import (
    NAMES,
    Clock,
    cluster,
    member,
    pod,
    scheduler,
)

WAITING = "gang team-a/big: 1 of 4 members exist; waiting for the rest"


def others(priority: int = 0) -> list[Json]:
    """Another namespace's pods on every node."""
    found = [pod(f"job-{n}", priority, n) for n in NAMES]
    for p in found:
        p["metadata"]["namespace"] = "team-b"
    return found


def ours(p: Json) -> Json:
    p["spec"]["schedulerName"] = "rdma-scheduler"
    return p


async def test_a_gang_whose_members_do_not_exist_neither_plans_holds_nor_preempts() -> None:
    clock = Clock()
    lone = ours(member("big", 0, 4, priority=100))
    s = scheduler([*cluster(), *others(), lone], clock, hold_after=0)
    answer = s.filter(lone, NAMES)
    assert answer == FilterOutcome([], {}, dict.fromkeys(NAMES, WAITING))
    assert s.preempt(lone, {"a0": MetaVictims(("uid-job-a0",))}) == {}
    for _ in range(4):  # rounds: time passes, the sweep finds it in the cache
        clock.now += 200
        s.sweep()
        s.filter(lone, NAMES)
    await s.evictor.drain()
    assert (s.evictor.evicted, s.holds.held_gpus(), s.planner.plans) == (0, 0, {})
    assert s.contention.waiting == {}
    assert all(s._source.cluster.pod("team-b", f"job-{n}") for n in NAMES)


async def test_once_its_members_exist_the_gang_preempts() -> None:
    clock = Clock()
    members = [ours(member("big", i, 2, priority=100)) for i in range(2)]
    s = scheduler([*cluster(), *others(), members[0]], clock)
    assert "1 of 2 members exist" in next(iter(s.filter(members[0], NAMES).unresolvable.values()))
    s._source.cluster.upsert_pod(members[1])
    s.filter(members[0], NAMES)
    await s.evictor.drain()
    assert s.evictor.evicted == 2


def test_a_gang_with_no_room_reserves_nothing_until_its_members_exist() -> None:
    """Free nodes: a declared gang of 4 with one member plans nothing, so another namespace's
    pod still has every node."""
    clock = Clock()
    lone = member("big", 0, 4)
    lone["spec"]["preemptionPolicy"] = "Never"
    s = scheduler([*cluster(), lone], clock, hold_after=0)
    s.filter(lone, NAMES)
    clock.now += 1000
    s.sweep()
    s.filter(lone, NAMES)
    other = pod("solo")
    other["metadata"]["namespace"] = "team-b"
    assert s.filter(other, NAMES).passed == NAMES
    assert s.planner.reserved == {}


def test_a_gang_larger_than_the_limit_is_refused_with_the_numbers() -> None:
    clock = Clock()
    members = [member("huge", i, 5) for i in range(5)]
    s = scheduler([*cluster(), *members], clock, max_gang_size=4)
    reason = (
        "gang team-a/huge declares 5 members, more than the extender allows (4, "
        "--max-gang-size); it is never placed"
    )
    assert s.filter(members[0], NAMES) == FilterOutcome([], {}, dict.fromkeys(NAMES, reason))


def test_a_member_kube_scheduler_sends_before_the_cache_has_it_counts() -> None:
    """It counts as existing: its verdict says where its gang would go, not that members are
    missing; the plan itself waits for the watch (nothing is done for a pod the apiserver has
    not shown the extender)."""
    clock = Clock()
    members = [member("pair", i, 2) for i in range(2)]
    s = scheduler([*cluster(), members[1]], clock)
    with pytest.raises(NotReady, match="its gang would get a plan: 2 pods on 2 nodes"):
        s.filter(members[0], NAMES)


def indexed_job(parallelism: int) -> list[Json]:
    """An Indexed Job's object and its first pod: the Job vouches for the others."""
    template = nodes.pod("template")
    job: Json = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "ix", "namespace": "team-a", "uid": "u-ix"},
        "spec": {
            "completionMode": "Indexed",
            "parallelism": parallelism,
            "template": {"spec": template["spec"]},
        },
    }
    first = pod("ix-0")
    first["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "ix", "uid": "u-ix", "controller": True}
    ]
    return [job, first]


def test_an_owning_workload_vouches_for_members_not_created_yet() -> None:
    clock = Clock()
    job, first = indexed_job(2)
    s = scheduler([*cluster(), job, first], clock)
    gang = s.gang(first)
    assert isinstance(gang, Gang)
    assert gang.vouched
    assert len(s.filter(first, NAMES).passed) == 1
    assert s.planner.presence(gang).summary() == {"exist": 1, "declared": 2, "vouched": True}


def test_explain_data_counts_the_members_that_exist() -> None:
    clock = Clock()
    s = scheduler([*cluster(), member("big", 0, 4), member("big", 1, 4)], clock)
    gang = s.gang(member("big", 0, 4))
    assert isinstance(gang, Gang)
    presence = s.planner.presence(gang)
    assert presence.summary() == {"exist": 2, "declared": 4, "vouched": False}
    assert presence.refusal() == "gang team-a/big: 2 of 4 members exist; waiting for the rest"


def test_bound_members_count_as_existing() -> None:
    gang = Gang("team-a", "g", 3, keys.GANG)
    assert Presence(gang, 1, 2, 4096).refusal() is None
    assert Presence(gang, 1, 1, 4096).exist == 2
