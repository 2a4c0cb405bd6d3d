"""Nominating a planned gang's members to their nodes, and taking the nominations back.

When a plan is made (or taken over), each member the pod cache holds and that is not bound yet
gets its slot at once, in the order the cache lists them (in a sliced or mixed plan, a slot of
its rank's slice or its group, as its filter call would give it), and is nominated to that
slot's node: kube-scheduler then tries that node first and sends the extender that one name
(extender/cluster/nominations.py says why and how). When the plan is dropped, its nominations
are taken back from the members still pending, unless a new plan nominated them again.

What is due is written by one task, `WRITERS` writes at a time, the latest wish per pod: a plan
redone before its nominations were written writes only the new ones. Only pods the cache holds
are nominated, under the uid the cache holds, to a node of a plan; a write the apiserver refuses
is logged and counted, not retried: the member's filter still finds its planned node among the
nodes kube-scheduler's search sends, as without nominations.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable
from itertools import islice

from extender.cluster.model import Cluster
from extender.cluster.nominations import NominationFailed, Nominations
from extender.cluster.pods import PodKey, pod_key
from extender.gangs.plan import Plan
from extender.gangs.sampling import moved_reason, nominating_reason
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")

WRITERS = 8
"""Nominations written at once."""

Hint = Callable[[Plan, PodKey], tuple[Hashable | None, int | None]]
"""A member's group and rank in a plan (Planner.member_hint)."""


def _uid(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def _bound(pod: Json) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _nominated(pod: Json) -> str | None:
    return (pod.get("status") or {}).get("nominatedNodeName") or None


class Nominator:
    def __init__(self, cluster: Cluster, writer: Nominations, writers: int = WRITERS) -> None:
        self._cluster = cluster
        self._writer = writer
        self._writers = writers
        self._wanted: dict[PodKey, tuple[str, str | None]] = {}
        """Pod -> (its uid, the node it is to be nominated to; None: to none)."""
        self._due: dict[PodKey, None] = {}
        """The pods whose nomination is still to be written, in order."""
        self._task: asyncio.Task[None] | None = None
        self.written = 0
        self.failed = 0

    def wanted(self, key: PodKey) -> str | None:
        """The node the pod is nominated to, or is to be."""
        found = self._wanted.get(key)
        return None if found is None else found[1]

    def landed(self, key: PodKey, node: str) -> bool:
        """Whether the cache shows the pod nominated to `node`."""
        pod = self._cluster.pod(*key)
        return pod is not None and _nominated(pod) == node

    def absent(self, gang: str, key: PodKey, node: str, names: list[str]) -> str | None:
        """Why a member whose planned `node` is not among `names` fails without that counting
        as a miss of the node: kube-scheduler tried first a nomination the plan has since moved
        from (its search follows in the same cycle), or the member's nomination to `node` is
        not written yet; None when neither."""
        if len(names) == 1 and names[0] in self._nominated_to(key):
            return moved_reason(gang, names[0], node)
        if self.wanted(key) == node and not self.landed(key, node):
            return nominating_reason(gang, node)
        return None

    def _nominated_to(self, key: PodKey) -> set[str]:
        """The nodes the pod is, or is to be, nominated to."""
        pod = self._cluster.pod(*key)
        found = {_nominated(pod) if pod is not None else None, self.wanted(key)}
        return {node for node in found if node is not None}

    def place(
        self,
        plan: Plan,
        members: Iterable[Json],
        hint: Hint,
        asking: tuple[PodKey, list[str]] | None = None,
    ) -> None:
        """Give the plan's pending members their slots and nominate each to its slot's node;
        the `asking` member (the one whose filter call made the plan, with the names it was
        sent) first, on a slot of one of those names if the plan has one free: its own call
        then passes at once."""
        pods = {pod_key(pod): pod for pod in members if not _bound(pod)}
        simple = not (plan.mixed or plan.slice_size or plan.slice_sizes)
        if asking is not None and simple and asking[0] not in plan.assigned:
            plan.assign_among(asking[0], asking[1])
        if not simple:
            for key in pods:
                if key not in plan.assigned:
                    plan.slot_of(key, *hint(plan, key))
        else:
            plan.assign_free(pods)
        for key, index in plan.assigned.items():
            pod = pods.get(key)
            if pod is not None:
                self._want(key, _uid(pod), plan.slots[index], _nominated(pod))
        self._start()

    def withdraw(self, plan: Plan) -> None:
        """Take back the plan's nominations from its members still pending."""
        for key, index in plan.assigned.items():
            wanted = self._wanted.get(key)
            if wanted is None or wanted[1] != plan.slots[index]:
                continue
            pod = self._cluster.pod(*key)
            if pod is None or _bound(pod) or _uid(pod) != wanted[0]:
                self.settled(key)
                continue
            self._want(key, wanted[0], None, _nominated(pod))
        self._start()

    def settled(self, key: PodKey) -> None:
        """The pod was bound or is gone: nothing more to write for it."""
        self._wanted.pop(key, None)
        self._due.pop(key, None)
        self._cluster.expected.pop(key, None)

    def sweep(self) -> None:
        """Forget the pods bound or gone since their nomination was wished."""
        for key in list(self._wanted):
            pod = self._cluster.pod(*key)
            if pod is None or _bound(pod):
                self.settled(key)

    def _want(self, key: PodKey, uid: str, node: str | None, current: str | None) -> None:
        if node is None:
            self._cluster.expected.pop(key, None)
        else:
            self._cluster.expected[key] = node
        if current == node:
            self._due.pop(key, None)
            if node is None:
                self._wanted.pop(key, None)
            else:
                self._wanted[key] = (uid, node)
            return
        self._wanted[key] = (uid, node)
        self._due[key] = None

    def _start(self) -> None:
        if not self._due or (self._task is not None and not self._task.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop yet (a test or a tool): written when one asks again
            return
        self._task = loop.create_task(self._write_due())

    async def _write_due(self) -> None:
        while self._due:
            batch = list(islice(self._due, self._writers))
            for key in batch:
                del self._due[key]
            await asyncio.gather(*(self._write(key) for key in batch))

    async def _write(self, key: PodKey) -> None:
        wanted = self._wanted.get(key)
        if wanted is None:
            return
        uid, node = wanted
        pod = self._cluster.pod(*key)
        if pod is None or _bound(pod) or _uid(pod) != uid:
            self.settled(key)
            return
        if _nominated(pod) != node:
            try:
                await self._writer.nominate(key[0], key[1], uid, node)
            except NominationFailed as e:
                level = logging.INFO if e.gone else logging.WARNING
                log.log(level, "could not nominate %s/%s to %s: %s", *key, node, e)
                self.failed += 1
                self._cluster.expected.pop(key, None)
                self._wanted.pop(key, None)
                return
            self.written += 1
        if node is None and self._wanted.get(key) == wanted:
            del self._wanted[key]

    async def drain(self) -> None:
        """Wait until every nomination due is written (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
