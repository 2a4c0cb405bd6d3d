"""Carrying out a gang preemption: every eviction tried dry first, then made, unit by unit.

The choice was made in extender/preemption/contention.py, synchronously inside a filter call; the
evictions run here, as a task of the app's event loop. If any victim's dry run is refused (a
PodDisruptionBudget), nothing is evicted: the hold is dropped and the gang decides again on
its next filter, without that preemption. If a real eviction is refused after the dry runs
passed (a race with another disruption), the pod stays and the preemption is given up there:
the evictions still due are not made, the hold is dropped, and the gang decides again later.
A PodDisruptionBudget is never bypassed unless the admin opts in
(`--delete-when-eviction-refused`): then the refused pod is deleted, so that no victim gang is
left running in part. The teardown of a gang that lost a member does the same.

Every eviction counts against the extender's eviction budget (extender/preemption/limits.py):
a preemption took its evictions when it was decided; a teardown takes them here, whole, or is
not made.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from extender.book.holds import Hold
from extender.cluster.disruptions import Disruptions, Refused
from extender.cluster.model import Cluster
from extender.cluster.pods import PodKey
from extender.gangs.identity import Gang
from extender.preemption.limits import DISRUPTION_BUDGET, EvictionBudget

log = logging.getLogger("kube_rdma.extender")


class Evictor:
    def __init__(
        self,
        cluster: Cluster,
        disruptions: Disruptions,
        refused: Callable[[Hold, str, list[PodKey], bool], None],
        budget: EvictionBudget | None = None,
        delete_when_refused: bool = False,
    ) -> None:
        """`refused(hold, reason, pods, begun)`: the preemption was given up, before any
        eviction or (`begun`) after some. `delete_when_refused`: a pod whose real eviction is
        refused is deleted (bypassing its PodDisruptionBudget); off, it stays and the
        preemption or teardown stops there."""
        self._cluster = cluster
        self._disruptions = disruptions
        self._refused = refused
        self.budget = budget or EvictionBudget(1 << 30, lambda: 0.0)
        self._delete = delete_when_refused
        self._tasks: set[asyncio.Task[None]] = set()
        self.evicted = 0
        self.preemptions = 0

    def start(self, hold: Hold) -> None:
        self._spawn(self.run(hold))

    async def run(self, hold: Hold) -> None:
        units = [(name, list(pods)) for name, pods in hold.units]
        refused: dict[PodKey, str] = {}
        for _, pods in units:
            for key in pods:
                try:
                    await self._evict(key, dry_run=True)
                except Refused as e:
                    refused[key] = str(e)
        if refused:
            log.info("gang %s does not preempt: %s", hold.label, "; ".join(refused.values()))
            self.budget.refusals[DISRUPTION_BUDGET] += 1
            self._refused(hold, "; ".join(refused.values()), list(refused), False)
            return
        self.preemptions += 1
        for unit, pods in units:
            message = (
                f"Preempted by gang {hold.label} (priority {hold.priority}) to place it whole "
                f"in {hold.domain}; {unit} is evicted whole"
            )
            stopped = await self._remove(unit, pods, "Preempted", message)
            if stopped is not None:
                key, reason = stopped
                log.warning(
                    "gang %s gives up its preemption: the eviction of %s/%s was refused (%s)",
                    hold.label,
                    *key,
                    reason,
                    extra={"gang": hold.label},
                )
                self._refused(hold, reason, [key], True)
                return

    def tear_down_gang(self, gang: Gang, pods: list[PodKey]) -> bool:
        """A member of `gang` is gone (kube-scheduler's preemption, or a running gang short of
        members past its grace): its other bound members go too. False when the eviction
        budget has no room for them all: nothing is evicted, and the caller may try later."""
        if not pods:
            return True
        if (full := self.budget.take(len(pods))) is not None:
            log.warning(
                "gang %s lost a member, but its %d others are not evicted now: %s",
                gang,
                len(pods),
                full,
                extra={"gang": str(gang)},
            )
            return False
        log.info(
            "gang %s lost a member; evicting its %d others",
            gang,
            len(pods),
            extra={"gang": str(gang)},
        )
        message = (
            f"a member of gang {gang} is gone (preempted or evicted); the gang cannot run "
            "in part, so its other members are evicted too"
        )
        self._spawn(self._tear_down(gang, pods, message))
        return True

    async def _tear_down(self, gang: Gang, pods: list[PodKey], message: str) -> None:
        stopped = await self._remove(f"gang {gang}", pods, "GangBroken", message)
        if stopped is not None:
            log.warning(
                "gang %s: teardown stopped, the eviction of %s/%s was refused (%s)",
                gang,
                *stopped[0],
                stopped[1],
                extra={"gang": str(gang)},
            )

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _remove(
        self, unit: str, pods: list[PodKey], reason: str, message: str
    ) -> tuple[PodKey, str] | None:
        """Evict each pod of `unit` still there, each pod gone getting an event. A refused
        eviction stops it there (the pod and the key returned, with why), unless the admin
        allows deleting the pod instead."""
        for key in pods:
            pod = self._cluster.pod(*key)
            if pod is None:
                continue
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            try:
                await self._disruptions.evict(*key, uid, dry_run=False)
            except Refused as e:
                self.budget.refusals[DISRUPTION_BUDGET] += 1
                if not self._delete:
                    return key, str(e)
                log.warning("%s: eviction of %s/%s refused (%s); deleting it", unit, *key, e)
                try:
                    await self._disruptions.delete(*key, uid)
                except Refused as again:
                    log.error("%s: could not delete %s/%s: %s", unit, *key, again)
                    continue
            self.evicted += 1
            self.budget.evictions[reason] += 1
            await self._disruptions.event(pod, reason, message)
        return None

    async def _evict(self, key: PodKey, dry_run: bool) -> None:
        pod = self._cluster.pod(*key)
        if pod is not None:
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            await self._disruptions.evict(*key, uid, dry_run=dry_run)

    async def drain(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
