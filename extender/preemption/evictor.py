"""Carrying out a gang preemption: every eviction tried dry first, then made, unit by unit.

The choice was made in extender/preemption/contention.py, synchronously inside a filter call; the
evictions run here, as a task of the app's event loop. If any victim's dry run is refused (a
PodDisruptionBudget), nothing is evicted: the hold is dropped and the gang decides again on
its next filter, without that preemption. If a real eviction is refused after the dry runs
passed (a race with another disruption), the rest of that victim's gang is torn down all the
same, the refused pod deleted, rather than leave a gang running in part.
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

log = logging.getLogger("kube_rdma.extender")


class Evictor:
    def __init__(
        self,
        cluster: Cluster,
        disruptions: Disruptions,
        refused: Callable[[Hold, str, list[PodKey]], None],
    ) -> None:
        self._cluster = cluster
        self._disruptions = disruptions
        self._refused = refused
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
            self._refused(hold, "; ".join(refused.values()), list(refused))
            return
        self.preemptions += 1
        for unit, pods in units:
            await self._tear_down(hold, unit, pods)

    async def _tear_down(self, hold: Hold, unit: str, pods: list[PodKey]) -> None:
        message = (
            f"Preempted by gang {hold.label} (priority {hold.priority}) to place it whole "
            f"in {hold.domain}; {unit} is evicted whole"
        )
        await self._remove(unit, pods, "Preempted", message)

    def tear_down_gang(self, gang: Gang, pods: list[PodKey]) -> None:
        """kube-scheduler preempted a member of `gang`: its other bound members go too."""
        if not pods:
            return
        log.info(
            "gang %s lost a member to kube-scheduler's preemption; evicting its %d others",
            gang,
            len(pods),
            extra={"gang": str(gang)},
        )
        message = (
            f"a member of gang {gang} was preempted by kube-scheduler; the gang cannot run "
            "in part, so its other members are evicted too"
        )
        self._spawn(self._remove(f"gang {gang}", pods, "GangBroken", message))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _remove(self, unit: str, pods: list[PodKey], reason: str, message: str) -> None:
        """Evict each pod of `unit` still there; one whose eviction is refused is deleted, so
        that the unit does not go on in part. Each pod gone gets an event."""
        for key in pods:
            pod = self._cluster.pod(*key)
            if pod is None:
                continue
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            try:
                await self._disruptions.evict(*key, uid, dry_run=False)
            except Refused as e:
                log.warning("%s: eviction of %s/%s refused (%s); deleting it", unit, *key, e)
                try:
                    await self._disruptions.delete(*key, uid)
                except Refused as again:
                    log.error("%s: could not delete %s/%s: %s", unit, *key, again)
                    continue
            self.evicted += 1
            await self._disruptions.event(pod, reason, message)

    async def _evict(self, key: PodKey, dry_run: bool) -> None:
        pod = self._cluster.pod(*key)
        if pod is not None:
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            await self._disruptions.evict(*key, uid, dry_run=dry_run)

    async def drain(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
