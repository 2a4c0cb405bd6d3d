"""The bind barrier: the exact outcome for every member when all arrive together, when they
arrive over several request timeouts, when the gang stops making progress, when one is deleted
or recreated while the others wait, when a bind does not match the plan, and on shutdown."""

from __future__ import annotations

import asyncio
import logging

import pytest

from extender.cluster.source import BindError
from extender.gangs.barrier import Barrier
from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings
from tests.extender.gangs.two_leaves import PAIR, TRIO, Setup, member, setup

PLANNED = ["a0", "a1", "a2"]
"""Where the trio is planned: leaf-b is too small."""
KEEPS_PLACE = (
    "gang team-a/trio: {} of 3 members reached bind so far; this one keeps its place and is "
    "bound when the last arrives"
)
STALLED = (
    "gang team-a/trio: 2 of 3 members reached bind, none new for 30s; none is bound, the gang "
    "is planned again"
)


class Binds:
    """The binds the barrier makes itself, applied to the test's cluster."""

    def __init__(self, s: Setup, gang: Gang) -> None:
        self.s, self.gang = s, gang
        self.made: list[tuple[str, str, str]] = []

    async def __call__(self, pod: tuple[str, str], uid: str, node: str) -> None:
        self.made.append((pod[1], uid, node))
        self.s.bind(self.gang, int(pod[1].rsplit("-", 1)[1]), node)


def planned(gang: Gang, timeout: float = 2.0) -> tuple[Setup, Barrier, Binds]:
    s = setup(gang, GangSettings(barrier_timeout=timeout, barrier_progress_timeout=30.0))
    for i in range(gang.size):
        s.filter(gang, i)
    binds = Binds(s, gang)
    return s, Barrier(s.planner, s.cluster, timeout, binds), binds


def key(gang: Gang, index: int) -> tuple[str, str]:
    return "team-a", f"{gang.name}-{index}"


def arrive(barrier: Barrier, gang: Gang, index: int, node: str) -> asyncio.Task[bool]:
    return asyncio.create_task(barrier.wait(key(gang, index), uid(gang, index), gang, node))


def uid(gang: Gang, index: int) -> str:
    return f"uid-{gang.name}-{index}"


async def outcome(wait: asyncio.Task[bool]) -> str:
    """'binds' when the request binds the member, 'bound' when the barrier bound it, else the
    reason its bind fails."""
    try:
        return "binds" if await wait else "bound"
    except BindError as e:
        return str(e)


async def test_members_go_on_together_once_all_arrived() -> None:
    s, barrier, binds = planned(TRIO)
    first_two = [arrive(barrier, TRIO, i, PLANNED[i]) for i in range(2)]
    await asyncio.sleep(0.05)
    assert not any(t.done() for t in first_two), "held until the last member arrives"
    assert await barrier.wait(key(TRIO, 2), uid(TRIO, 2), TRIO, PLANNED[2])
    assert [await outcome(t) for t in first_two] == ["binds", "binds"]
    assert binds.made == [], "every request was still waiting: each binds its own member"
    assert list(s.planner.plans) == [TRIO.key], "the plan stays until the members are bound"


async def test_a_member_keeps_its_place_after_its_request_times_out() -> None:
    s, barrier, binds = planned(TRIO, timeout=0.05)
    assert await outcome(arrive(barrier, TRIO, 0, "a0")) == KEEPS_PLACE.format(1)
    s.clock.now += 20  # a new member within the progress timeout: the gang progresses
    assert await outcome(arrive(barrier, TRIO, 1, "a1")) == KEEPS_PLACE.format(2)
    s.clock.now += 20
    assert await outcome(arrive(barrier, TRIO, 2, "a2")) == "binds"
    await barrier.drain()
    assert sorted(binds.made) == [
        ("trio-0", "uid-trio-0", "a0"),
        ("trio-1", "uid-trio-1", "a1"),
    ], "the members whose requests had returned are bound by the extender"


async def test_a_retried_request_of_a_member_the_extender_binds_waits_for_that_bind() -> None:
    _, barrier, binds = planned(TRIO, timeout=0.05)
    for i in range(2):
        assert await outcome(arrive(barrier, TRIO, i, PLANNED[i])) == KEEPS_PLACE.format(i + 1)
    last = arrive(barrier, TRIO, 2, "a2")
    await asyncio.sleep(0)
    retried = arrive(barrier, TRIO, 0, "a0")  # kube-scheduler's retry, as the barrier opens
    assert [await outcome(t) for t in (last, retried)] == ["binds", "bound"]
    assert len(binds.made) == 2


async def test_a_gang_without_new_members_for_the_progress_timeout_is_given_up() -> None:
    s, barrier, _ = planned(TRIO, timeout=0.1)
    waits = [arrive(barrier, TRIO, i, PLANNED[i]) for i in range(2)]
    await asyncio.sleep(0.02)
    s.clock.now += 31
    assert [await outcome(t) for t in waits] == [STALLED, STALLED]
    assert (s.planner.plans, s.book.by_node) == ({}, {})


async def test_the_sweep_gives_up_a_gang_whose_requests_have_returned() -> None:
    s, barrier, _ = planned(TRIO, timeout=0.02)
    for i in range(2):
        assert await outcome(arrive(barrier, TRIO, i, PLANNED[i])) == KEEPS_PLACE.format(i + 1)
    s.planner.sweep()
    assert list(s.planner.plans) == [TRIO.key], "progressing until the progress timeout"
    s.clock.now += 31
    s.planner.sweep()
    assert (s.planner.plans, s.book.by_node) == ({}, {})


async def test_a_member_deleted_while_the_others_wait_opens_nothing() -> None:
    s, barrier, binds = planned(TRIO, timeout=0.2)
    waits = [arrive(barrier, TRIO, i, PLANNED[i]) for i in range(2)]
    await asyncio.sleep(0.02)
    s.cluster.delete_pod(key(TRIO, 1))
    s.planner.sweep()
    last = arrive(barrier, TRIO, 2, PLANNED[2])
    # The deleted member's wait fails at once; the other two time out, still in place.
    assert [await outcome(t) for t in (*waits, last)] == [
        KEEPS_PLACE.format(2),
        "pod team-a/trio-1 was deleted",
        KEEPS_PLACE.format(2),
    ]
    assert binds.made == []


async def test_the_arrival_of_a_pod_since_recreated_does_not_count() -> None:
    s, barrier, binds = planned(TRIO, timeout=0.05)
    for i in range(2):
        assert await outcome(arrive(barrier, TRIO, i, PLANNED[i])) == KEEPS_PLACE.format(i + 1)
    recreated = member(TRIO, 0)
    recreated["metadata"]["uid"] = "uid-trio-0-new"
    s.cluster.upsert_pod(recreated)
    assert await outcome(arrive(barrier, TRIO, 2, "a2")) == KEEPS_PLACE.format(2)
    assert binds.made == []


async def test_a_bind_to_another_node_than_planned_fails() -> None:
    _, barrier, _ = planned(PAIR)
    with pytest.raises(BindError) as error:
        await barrier.wait(key(PAIR, 0), "", PAIR, "a0")
    assert str(error.value) == "gang team-a/pair planned this pod on b0, not a0"


async def test_a_member_without_a_plan_is_retried() -> None:
    s = setup(PAIR)
    barrier = Barrier(s.planner, s.cluster, 2.0, Binds(s, PAIR))
    with pytest.raises(BindError) as error:
        await barrier.wait(key(PAIR, 0), "", PAIR, "b0")
    assert (
        str(error.value) == "gang team-a/pair has no plan for this pod (it expired?); it is retried"
    )


async def test_a_member_asking_no_gpu_counts_without_a_slot() -> None:
    s, barrier, _ = planned(PAIR)
    s.cluster.upsert_pod(member(PAIR, 9))
    worker = arrive(barrier, PAIR, 0, "b0")
    await asyncio.sleep(0.02)
    assert await barrier.wait(key(PAIR, 9), "", PAIR, "a3", planned=False)
    assert await outcome(worker) == "binds"


async def test_a_pod_past_the_gang_size_and_a_whole_gang_do_not_wait() -> None:
    s, barrier, _ = planned(PAIR)
    assert await barrier.wait(key(PAIR, 2), "", PAIR, "a0")  # no slot left for a third pod
    s.bind(PAIR, 0, "b0")
    s.bind(PAIR, 1, "b1")
    assert s.planner.plans == {}
    assert await barrier.wait(key(PAIR, 2), "", PAIR, "a0")


async def test_closing_fails_the_waiting_binds_at_once_and_every_later_one() -> None:
    _, barrier, binds = planned(TRIO, timeout=30.0)
    waits = [arrive(barrier, TRIO, i, PLANNED[i]) for i in range(2)]
    await asyncio.sleep(0.02)
    barrier.close("stopping")
    done, _ = await asyncio.wait(waits, timeout=1.0)
    assert len(done) == 2, "failed at once, not at the barrier timeout"
    assert [await outcome(t) for t in waits] == ["stopping", "stopping"]
    assert await outcome(arrive(barrier, TRIO, 2, PLANNED[2])) == "stopping"
    assert binds.made == []


class FailingBinds(Binds):
    """The apiserver refuses the extender's own bind of the first member."""

    def __init__(self, s: Setup, gang: Gang, error: Exception) -> None:
        super().__init__(s, gang)
        self.error = error

    async def __call__(self, pod: tuple[str, str], uid: str, node: str) -> None:
        if pod[1].endswith("-0"):
            raise self.error
        await super().__call__(pod, uid, node)


@pytest.mark.parametrize(
    ("error", "logged"),
    [
        (
            BindError("cannot bind team-a/pair-0: InternalError"),
            "bind of team-a/pair-0 after its gang arrived failed: cannot bind team-a/pair-0: "
            "InternalError",
        ),
        (RuntimeError("lost"), "bind of team-a/pair-0 after its gang arrived failed"),
    ],
)
async def test_the_extender_s_own_bind_of_a_returned_member_failing_leaves_it_to_a_retry(
    error: Exception, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    s = setup(PAIR, GangSettings(barrier_timeout=0.05, barrier_progress_timeout=30.0))
    for i in range(PAIR.size):
        s.filter(PAIR, i)
    binds = FailingBinds(s, PAIR, error)
    barrier = Barrier(s.planner, s.cluster, 0.05, binds)
    nodes = [s.planner.plans[PAIR.key].slots[s.planner.plans[PAIR.key].assigned[key(PAIR, i)]]
             for i in range(2)]  # fmt: skip
    keeps_place = (
        "gang team-a/pair: 1 of 2 members reached bind so far; this one keeps its place and is "
        "bound when the last arrives"
    )
    assert await outcome(arrive(barrier, PAIR, 0, nodes[0])) == keeps_place
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kube_rdma.extender"):
        assert await outcome(arrive(barrier, PAIR, 1, nodes[1])) == "binds"
        await barrier.drain()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [logged]
    assert binds.made == []
    # kube-scheduler retries the member: the barrier is open, so its own request binds it.
    assert await outcome(arrive(barrier, PAIR, 0, nodes[0])) == "binds"
