"""The bind barrier: the exact outcome for every member when all arrive, when one never does,
when one is deleted while the others wait, and when a bind does not match the plan."""

from __future__ import annotations

import asyncio

import pytest

from extender.cluster.source import BindError
from extender.gangs.barrier import Barrier
from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings
from tests.extender.gangs.two_leaves import PAIR, TRIO, Setup, member, setup

PLANNED = ["a0", "a1", "a2"]
"""Where the trio is planned: leaf-b is too small."""


def planned(gang: Gang, timeout: float = 2.0) -> tuple[Setup, Barrier]:
    s = setup(gang, GangSettings(barrier_timeout=timeout))
    for i in range(gang.size):
        s.filter(gang, i)
    return s, Barrier(s.planner, s.cluster, timeout)


def key(gang: Gang, index: int) -> tuple[str, str]:
    return "team-a", f"{gang.name}-{index}"


async def outcome(wait: asyncio.Task[None]) -> str:
    """'' when the member may bind, else the reason its bind fails."""
    try:
        await wait
    except BindError as e:
        return str(e)
    return ""


async def test_members_go_on_together_once_all_arrived() -> None:
    s, barrier = planned(TRIO)
    first_two = [
        asyncio.create_task(barrier.wait(key(TRIO, i), TRIO, PLANNED[i])) for i in range(2)
    ]
    await asyncio.sleep(0.05)
    assert not any(t.done() for t in first_two), "held until the last member arrives"
    await barrier.wait(key(TRIO, 2), TRIO, PLANNED[2])
    assert [await outcome(t) for t in first_two] == ["", ""]
    assert list(s.planner.plans) == [TRIO.key], "the plan stays until the members are bound"


async def test_a_timeout_fails_every_waiting_member_and_drops_the_plan() -> None:
    s, barrier = planned(TRIO, timeout=0.05)
    waits = [asyncio.create_task(barrier.wait(key(TRIO, i), TRIO, PLANNED[i])) for i in range(2)]
    reason = (
        "gang team-a/trio: 2 of 3 members reached bind within 0.05s; none is bound, the gang "
        "is planned again"
    )
    assert [await outcome(t) for t in waits] == [reason, reason]
    assert (s.planner.plans, s.book.by_node) == ({}, {})


async def test_a_member_deleted_while_the_others_wait_opens_nothing() -> None:
    s, barrier = planned(TRIO, timeout=0.2)
    waits = [asyncio.create_task(barrier.wait(key(TRIO, i), TRIO, PLANNED[i])) for i in range(2)]
    await asyncio.sleep(0.02)
    s.cluster.delete_pod(key(TRIO, 1))
    s.planner.sweep()
    last = asyncio.create_task(barrier.wait(key(TRIO, 2), TRIO, PLANNED[2]))
    reason = (
        "gang team-a/trio: 2 of 3 members reached bind within 0.2s; none is bound, the gang "
        "is planned again"
    )
    # The deleted member's wait fails at once; the first member's timeout then fails its own
    # wait and the last member's with the same reason.
    assert [await outcome(t) for t in (*waits, last)] == [
        reason,
        "pod team-a/trio-1 was deleted",
        reason,
    ]
    assert s.planner.plans == {}


async def test_a_bind_to_another_node_than_planned_fails() -> None:
    _, barrier = planned(PAIR)
    with pytest.raises(BindError) as error:
        await barrier.wait(key(PAIR, 0), PAIR, "a0")
    assert str(error.value) == "gang team-a/pair planned this pod on b0, not a0"


async def test_a_member_without_a_plan_is_retried() -> None:
    s = setup(PAIR)
    barrier = Barrier(s.planner, s.cluster, 2.0)
    with pytest.raises(BindError) as error:
        await barrier.wait(key(PAIR, 0), PAIR, "b0")
    assert (
        str(error.value) == "gang team-a/pair has no plan for this pod (it expired?); it is retried"
    )


async def test_a_member_asking_no_gpu_counts_without_a_slot() -> None:
    s, barrier = planned(PAIR)
    s.cluster.upsert_pod(member(PAIR, 9))
    worker = asyncio.create_task(barrier.wait(key(PAIR, 0), PAIR, "b0"))
    await asyncio.sleep(0.02)
    await barrier.wait(key(PAIR, 9), PAIR, "a3", planned=False)
    assert await outcome(worker) == ""


async def test_a_pod_past_the_gang_size_and_a_whole_gang_do_not_wait() -> None:
    s, barrier = planned(PAIR)
    await barrier.wait(key(PAIR, 2), PAIR, "a0")  # no slot left for a third pod
    s.bind(PAIR, 0, "b0")
    s.bind(PAIR, 1, "b1")
    assert s.planner.plans == {}
    await barrier.wait(key(PAIR, 2), PAIR, "a0")
