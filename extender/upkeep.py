"""Gang upkeep between the verbs: what happens to gangs as time passes and pods come and go,
and what a process does first when another one served meanwhile.

The verbs answer one pod; the upkeep looks at every gang. On each sweep it expires plans,
decides the gangs whose members wait in the cache (kube-scheduler never calls the filter for
them on a full cluster), ends stale waits, tears down what kube-scheduler's own preemption left
of a gang, and judges gangs left partial. Before any verb, it adopts the plans and holds another
process recorded (extender/gangs/resume.py), so the gangs in flight are finished, not planned
anew.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

from extender.book.holds import HoldBook, hold_of
from extender.book.records import PlanRecord, PlanRecords
from extender.book.reservations import GangKey
from extender.cluster.model import Cluster
from extender.cluster.pods import PodKey, pod_key
from extender.gangs.identity import Gang, Singleton
from extender.gangs.planner import Planner
from extender.gangs.resume import Members, resume
from extender.podview import PodView
from extender.preemption.broken import BrokenGangs
from extender.preemption.contention import Contention, Waiting
from extender.preemption.evictor import Evictor
from extender.preemption.priority import disrupted_one_by_one
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")
TAKEN_OVER = "another kube-rdma extender served meanwhile; the pod is retried"


class Upkeep:
    def __init__(
        self,
        cluster: Cluster,
        gang: Callable[[Json], Gang | Singleton],
        view: Callable[[Json], PodView],
        planner: Planner,
        contention: Contention,
        holds: HoldBook,
        evictor: Evictor,
        broken: BrokenGangs,
        records: PlanRecords,
    ) -> None:
        self._cluster = cluster
        self._gang = gang
        self._view = view
        self._planner = planner
        self._contention = contention
        self._holds = holds
        self._evictor = evictor
        self._broken = broken
        self._records = records
        self._adopted = 0
        """The records' foreign changes when this process last adopted them."""

    def sweep(self) -> None:
        """None while another process may have written plans since this one last adopted
        them (a standby, or a leader that lost its place)."""
        if self._adopted == self._records.foreign_changes:
            self._planner.sweep()
            self._decide_waiting()
            self._contention.sweep(self._still_waiting)
            self._tear_down_preempted()
            self._broken.check(self._cluster.pods())

    def decide(self, waiting: Waiting) -> None:
        """The gang's plan now, or else its preemption or hold; nothing for a gang that may not
        act (its members do not exist, or it can never be placed): it waits no more here."""
        if self._planner.refusal(waiting.member, waiting.gang) is not None:
            self._contention.forget(waiting.gang.key)
            return
        no_fit = self._planner.attempt(waiting.gang, waiting.member)
        if no_fit is None:
            self._contention.placed(waiting.gang.key)
        else:
            self._contention.unplaced(waiting, no_fit)

    def take_over(self) -> None:
        """Adopt the recorded plans when another process has written some since last time."""
        foreign = self._records.foreign_changes
        if foreign == self._adopted:
            return
        self._adopted = foreign
        saved = dict(self._records.saved())
        plans = {k: r for k, r in saved.items() if r.hold is None}
        resume(self._planner, plans, self._members(plans.keys()), TAKEN_OVER)
        self._adopt_holds([r for r in saved.values() if r.hold is not None])

    def _decide_waiting(self) -> None:
        cluster = self._cluster
        pending = (p for k in list(cluster.pending) if (p := cluster.pod(*k)) is not None)
        for waiting in self._contention.waiting_from_cache(pending, self._member_of):
            self.decide(waiting)

    def _member_of(self, pod: Json) -> tuple[Gang, PodView] | None:
        gang, view = self._gang(pod), self._view(pod)
        if not isinstance(gang, Gang) or not view.relevant or gang.key in self._planner.plans:
            return None
        # A gang that can never be placed neither holds nor preempts.
        return None if self._planner.refusal(view, gang) else (gang, view)

    def _still_waiting(self, gang: GangKey) -> bool:
        waiting = self._contention.waiting[gang]
        return any(
            (pod := self._cluster.pod(*key)) is not None
            and not (pod.get("spec") or {}).get("nodeName")
            for key in waiting.members
        )

    def _tear_down_preempted(self) -> None:
        """kube-scheduler preempted a gang member for another pod: the rest of its gang goes
        too, whole, rather than hold GPUs for a job that cannot run; not for a scheduling.k8s.io
        group whose disruptionMode is Single, whose pods go one by one."""
        preempted = self._cluster.preempted
        while preempted:
            gang = self._gang(preempted.popleft())
            if isinstance(gang, Gang) and not disrupted_one_by_one(gang):
                self._evictor.tear_down_gang(gang, self._gang_pods(gang.key, bound=True))

    def _gang_pods(self, gang: GangKey, bound: bool) -> list[PodKey]:
        """The gang's pods in the cache, bound or pending."""
        return [
            pod_key(pod)
            for pod in self._cluster.pods()
            if (pod.get("metadata") or {}).get("namespace") == gang[0]
            and bool((pod.get("spec") or {}).get("nodeName")) == bound
            and gang_key(self._gang(pod)) == gang
        ]

    def _adopt_holds(self, records: list[PlanRecord]) -> None:
        """Keep the holds another process made; go on evicting a preemption's victims that
        are still there (their evictions are tried dry again first)."""
        self._holds.clear()
        found = self._members({r.gang for r in records})
        for record in records:
            hold = hold_of(record, self._contention.now())
            members = found.get(record.gang)
            if hold is None or members is None or record.gang in self._planner.plans:
                continue
            self._holds.adopt(hold)
            waiting = self._contention.note_adopted(members.gang, members.member, hold.priority)
            waiting.members.update(self._gang_pods(record.gang, bound=False))
            if any(self._cluster.pod(*key) for key in hold.victims):
                self._evictor.start(hold)
        if records:
            log.info("took over %d gang holds from their records", len(records))

    def _members(self, gangs: Collection[GangKey]) -> dict[GangKey, Members]:
        """What the cache shows of each gang: a member with GPU or RDMA requests, and the
        members bound."""
        found: dict[GangKey, Members] = {}
        namespaces = {namespace for namespace, _ in gangs}
        for pod in self._cluster.pods():
            if (pod.get("metadata") or {}).get("namespace") not in namespaces:
                continue
            gang = self._gang(pod)
            if not isinstance(gang, Gang) or gang.key not in gangs:
                continue
            view = self._view(pod)
            entry = found.get(gang.key)
            if entry is None or (view.relevant and not entry.member.relevant):
                entry = found[gang.key] = Members(gang, view, entry.bound if entry else {})
            if node := (pod.get("spec") or {}).get("nodeName"):
                entry.bound[view.key] = str(node)
        return found


def gang_key(gang: Gang | Singleton) -> GangKey | None:
    return gang.key if isinstance(gang, Gang) else None
