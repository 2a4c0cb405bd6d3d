"""Leader election: the timing rules alone, then two electors racing for one Lease on the fake
apiserver, with a clock the test moves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio import client

from kube_rdma.core.objects import Json
from kube_rdma.kube.lease import Election, LeaseElector, LeaseTiming, lease_spec
from testbed.fakeapi import FakeApiServer

TIMING = LeaseTiming(duration=15, renew_deadline=10, retry_period=2)


def lease(holder: str, renewed: str = "t0", transitions: int = 0) -> Json:
    spec = {"holderIdentity": holder, "renewTime": renewed, "leaseTransitions": transitions}
    return {"spec": spec}


@pytest.mark.parametrize(
    ("holder", "seen_at", "now", "expected"),
    [
        ("", 0.0, 0.0, True),  # nobody holds it
        ("me", 0.0, 14.0, True),  # ours: renew
        ("other", 0.0, 14.9, False),  # held, and renewed less than a lease duration ago
        ("other", 0.0, 15.0, True),  # unchanged for a whole lease duration: expired
        ("other", 10.0, 20.0, False),  # the expiry counts from when the record last changed
    ],
)
def test_may_write(holder: str, seen_at: float, now: float, expected: bool) -> None:
    election = Election("me", TIMING)
    election.observe(lease(holder), seen_at)
    assert election.may_write(now) is expected


def test_an_unchanged_record_does_not_restart_the_expiry() -> None:
    election = Election("me", TIMING)
    election.observe(lease("other"), 0.0)
    election.observe(lease("other"), 10.0)  # read again, the same record
    assert election.may_write(15.0)
    election.observe(lease("other", renewed="t1"), 15.0)  # renewed meanwhile
    assert not election.may_write(29.0)


def test_a_leader_is_lost_after_the_renew_deadline_without_renewal() -> None:
    election = Election("me", TIMING)
    assert election.lost(0.0)  # never renewed
    election.renewed(100.0)
    assert not election.lost(110.0)
    assert election.lost(110.1)


def test_timing_is_validated() -> None:
    with pytest.raises(ValueError, match=r"lease duration > renew deadline > 1.2 x retry period"):
        LeaseTiming(duration=10, renew_deadline=10, retry_period=2)


def test_lease_spec_takes_renews_and_counts_transitions() -> None:
    now = datetime(2025, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)
    stamp = "2025-01-02T03:04:05.600000Z"
    taken = lease_spec({"holderIdentity": "a", "leaseTransitions": 2}, "b", TIMING, now)
    assert taken == {
        "holderIdentity": "b",
        "leaseDurationSeconds": 15,
        "acquireTime": stamp,
        "renewTime": stamp,
        "leaseTransitions": 3,
    }
    renewed = lease_spec({**taken, "acquireTime": "before"}, "b", TIMING, now)
    assert renewed == {**taken, "acquireTime": "before"}
    assert lease_spec({}, "a", TIMING, now)["leaseTransitions"] == 0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def leases(fake_api: FakeApiServer) -> AsyncIterator[Any]:
    async with fake_api.api_client() as api:
        yield client.CoordinationV1Api(api)


def elector(api: Any, identity: str, clock: Clock) -> LeaseElector:
    return LeaseElector(api, "kube-rdma", "sched", identity, TIMING, clock=clock)


async def test_one_of_two_replicas_leads_and_the_other_takes_over_once_it_expires(
    fake_api: FakeApiServer, leases: Any
) -> None:
    clock = Clock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.now = 14.0
    assert await a.try_acquire_or_renew()  # renewed at 14: b's expiry restarts when it sees it
    clock.now = 20.0
    assert not await b.try_acquire_or_renew()
    clock.now = 34.0  # a silent since 14, b saw the renewal at 20: not yet
    assert not await b.try_acquire_or_renew()
    clock.now = 35.0
    assert await b.try_acquire_or_renew()
    stored = fake_api.get("leases", "sched", "kube-rdma")["spec"]
    assert (stored["holderIdentity"], stored["leaseTransitions"]) == ("b", 1)
    assert a.election.lost(clock.now)
    assert not await a.try_acquire_or_renew()  # a sees b's fresh record
    assert a.election.holder() == "b"


async def test_a_released_lease_is_taken_at_once(fake_api: FakeApiServer, leases: Any) -> None:
    clock = Clock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    await a.acquire()
    await a.release()
    assert fake_api.get("leases", "sched", "kube-rdma")["spec"]["holderIdentity"] is None
    assert await b.try_acquire_or_renew()
