"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package does
it, so that of several replicas exactly one acts at a time.

The rules (client-go's tryAcquireOrRenew): a replica takes the Lease when nobody holds it, when
it holds it itself, or when the Lease has not changed for a whole lease duration *by the
replica's own clock*: the time written in the Lease (renewTime) is only informative, since the
replicas' clocks need not agree; what counts is when this replica last saw the record change.
Every write is an update with the resourceVersion read, so of two replicas racing for an expired
Lease one wins and the other gets 409 Conflict. A leader renews every retry period and gives up
(it must stop acting) when no renewal succeeded for the renew deadline, which is shorter than the
lease duration: it stops before anyone else may start. kube-scheduler's defaults are 15 s lease,
10 s renew deadline, 2 s retry.

`Election` is that timing logic alone, testable without a server; `LeaseElector` drives it
against the apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError, Conflict, NotFound

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class LeaseTiming:
    duration: float = 15.0
    """Seconds a Lease unchanged stays held: how long a standby waits for a silent leader."""
    renew_deadline: float = 10.0
    """Seconds a leader keeps acting without a successful renewal."""
    retry_period: float = 2.0
    """Seconds between attempts to take or renew."""

    def __post_init__(self) -> None:
        if not self.duration > self.renew_deadline > self.retry_period * 1.2 > 0:
            raise ValueError(
                "need lease duration > renew deadline > 1.2 x retry period > 0, got "
                f"{self.duration:g}, {self.renew_deadline:g}, {self.retry_period:g}"
            )


class Election:
    """What one replica knows of a Lease and when it learnt it; decides whether it may write."""

    def __init__(self, identity: str, timing: LeaseTiming) -> None:
        self.identity = identity
        self.timing = timing
        self._record: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self.renewed_at: float | None = None
        """When this replica last took or renewed the Lease."""

    def observe(self, lease: Json, now: float) -> None:
        """Note the Lease as read; its expiry counts from the last time its record changed."""
        spec = lease.get("spec") or {}
        record = (
            str(spec.get("holderIdentity") or ""),
            str(spec.get("renewTime") or ""),
            str(spec.get("leaseTransitions") or 0),
        )
        if record != self._record:
            self._record, self._observed_at = record, now

    def holder(self) -> str:
        return self._record[0] if self._record else ""

    def may_write(self, now: float) -> bool:
        """Whether taking or renewing the Lease is allowed: free, ours, or expired."""
        holder = self.holder()
        expired = now >= self._observed_at + self.timing.duration
        return not holder or holder == self.identity or expired

    def renewed(self, now: float) -> None:
        self.renewed_at = now

    def lost(self, now: float) -> bool:
        """Whether a leader must stop: no renewal for the renew deadline."""
        return self.renewed_at is None or now - self.renewed_at > self.timing.renew_deadline


def lease_spec(current: Json, identity: str, timing: LeaseTiming, now: datetime) -> Json:
    """The spec that takes or renews `current` (a Lease's spec, {} for a new one)."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    taking = current.get("holderIdentity") != identity
    transitions = int(current.get("leaseTransitions") or 0)
    if taking and current.get("holderIdentity"):
        transitions += 1
    return {
        "holderIdentity": identity,
        "leaseDurationSeconds": max(1, round(timing.duration)),
        "acquireTime": stamp if taking else current.get("acquireTime", stamp),
        "renewTime": stamp,
        "leaseTransitions": transitions,
    }


class LeaseElector:
    """Takes and keeps the Lease `namespace/name` through `api` (a kubernetes-asyncio
    CoordinationV1Api) for `identity`."""

    def __init__(
        self,
        api: Any,
        namespace: str,
        name: str,
        identity: str,
        timing: LeaseTiming,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._api, self._namespace, self._name = api, namespace, name
        self.election = Election(identity, timing)
        self._clock, self._sleep = clock, sleep

    async def acquire(self) -> None:
        """Return once this replica holds the Lease."""
        while not await self.try_acquire_or_renew():
            await self._sleep(self.election.timing.retry_period)
        log.info("took lease %s/%s", self._namespace, self._name)

    async def hold(self) -> None:
        """Renew every retry period; return when leadership is lost (the caller must stop): no
        renewal for the renew deadline, or another replica seen holding the Lease."""
        while True:
            await self._sleep(self.election.timing.retry_period)
            renewed = await self.try_acquire_or_renew()
            taken = self.election.holder() not in ("", self.election.identity)
            if taken or (not renewed and self.election.lost(self._clock())):
                log.warning("lost lease %s/%s", self._namespace, self._name)
                return

    async def release(self) -> None:
        """Hand the Lease back on a clean stop, so that a standby need not wait it out."""
        with contextlib.suppress(ApiError):
            lease = await self._read(f"lease {self._namespace}/{self._name}")
            if lease is not None and self.election.holder() == self.election.identity:
                lease["spec"] = {**lease.get("spec", {}), "holderIdentity": None}
                await self._replace(lease)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt: read the Lease, and take or renew it when allowed."""
        what = f"lease {self._namespace}/{self._name}"
        try:
            lease = await self._read(what)
            if lease is None:
                await self._write("create " + what, {})
            else:
                self.election.observe(lease, self._clock())
                if not self.election.may_write(self._clock()):
                    return False
                await self._write("update " + what, lease)
        except (Conflict, NotFound):
            return False  # another replica wrote first
        except ApiError as e:
            log.warning("%s", e)
            return False
        self.election.renewed(self._clock())
        return True

    async def _read(self, what: str) -> Json | None:
        try:
            return await call(
                "read " + what,
                self._api.read_namespaced_lease,
                self._name,
                self._namespace,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except NotFound:
            return None

    async def _write(self, what: str, lease: Json) -> None:
        timing, identity = self.election.timing, self.election.identity
        spec = lease_spec(lease.get("spec") or {}, identity, timing, datetime.now(UTC))
        if lease:
            written = await self._replace({**lease, "spec": spec})
        else:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self._name, "namespace": self._namespace},
                "spec": spec,
            }
            written = await call(
                what,
                self._api.create_namespaced_lease,
                self._namespace,
                body,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        self.election.observe(written, self._clock())

    async def _replace(self, lease: Json) -> Json:
        """Write `lease` back, its resourceVersion the precondition."""
        return await call(
            f"update lease {self._namespace}/{self._name}",
            self._api.replace_namespaced_lease,
            self._name,
            self._namespace,
            lease,
            request_timeout=REQUEST_TIMEOUT_SECONDS,
        )
