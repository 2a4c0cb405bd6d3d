"""The plan keeper: a gang is planned whole when its first member is filtered, its nodes are held
for it, and its later members are steered to them.

- Planning: for each node, how many members fit (every filter passing, free GPUs and RDMA
  units after other gangs' reservations) and which members may use it at all (node selector,
  required affinity, taints, cordons: extender/gangs/pools.py); extender/gangs/choose.py then
  picks the domain and the nodes. extender/gangs/making.py makes each plan; it is kept here.
- Reservation: later members are steered to their planned node, and every other pod sees the
  planned capacity as used (extender/book/reservations.py).
- Upkeep: a plan without progress for `plan_timeout` expires, and so does one whose members
  stopped arriving at the bind barrier for `barrier_progress_timeout`; a planned node that no
  longer fits, that kube-scheduler keeps leaving out of its sampled candidates, or that it ruled
  out (extender/gangs/sampling.py) makes the plan be redone (extender/gangs/standing.py
  judges); members deleted release their slots; a gang fully bound needs no plan any more.

The bind barrier (extender/gangs/barrier.py) waits on the plans kept here.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace

from extender.book.holds import HoldBook
from extender.book.records import MemoryRecords, PlanRecords
from extender.book.reservations import NARROWEST, Fence, GangKey, Reservations
from extender.cluster.model import Cluster
from extender.cluster.pods import PodKey
from extender.cluster.source import BindError
from extender.engine import Engine, FilterOutcome
from extender.gangs.fitting import FitMeasure
from extender.gangs.identity import Gang, gang_of
from extender.gangs.making import PlanMaker, need_of
from extender.gangs.native import child_rank
from extender.gangs.nominating import Nominator
from extender.gangs.plan import Plan, record_of
from extender.gangs.quorum import Presence, Quorum
from extender.gangs.requirements import LevelSettings, Requirements
from extender.gangs.sampling import ruled_out_reason, sampled, sampled_reason
from extender.gangs.settings import Decision as Decision
from extender.gangs.settings import GangSettings as GangSettings
from extender.gangs.standing import Standing
from extender.levels.ranks import rank_of
from extender.podview import PodView
from kube_rdma.core.frameworks import kubeflow
from kube_rdma.core.nodeconstraints import NodeConstraints
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")


class Planner:
    def __init__(
        self,
        cluster: Cluster,
        engine: Engine,
        book: Reservations,
        settings: GangSettings,
        clock: Callable[[], float] = time.monotonic,
        records: PlanRecords | None = None,
        holds: HoldBook | None = None,
        priority: Callable[[GangKey], int] = lambda gang: 0,
        ahead: Callable[[GangKey], list[tuple[Gang, PodView]]] = lambda gang: [],
        members: Callable[[Gang], Iterable[Json]] = lambda gang: (),
        top_owner: Callable[[Json], Json | None] = lambda pod: None,
        requirements: Requirements | None = None,
        fence_of: Callable[[Plan], Fence | None] | None = None,
        quorum: Quorum | None = None,
        nominator: Nominator | None = None,
    ) -> None:
        """`holds` keeps the nodes held for waiting gangs from lower-priority gangs' plans;
        `priority` gives a gang's priority, and `ahead` the waiting gangs of a higher one,
        first first (extender/preemption/contention.py); `quorum` counts a gang's members
        (default: by the pods' own keys, extender/gangs/quorum.py); `nominator` nominates each
        plan's members to their nodes (extender/gangs/nominating.py; None: no nominations)."""
        self.nominator = nominator
        self._quorum = quorum or Quorum(
            cluster,
            lambda pod: gang_of(pod, cluster.podgroup_size, native=cluster.native.find),
            clock=clock,
        )
        self._holds = holds or HoldBook()
        self._priority = priority
        self._ahead = ahead
        self._cluster = cluster
        self._members = members
        """The gang's members not bound yet, from the pod cache."""
        self.records = records or MemoryRecords()
        """Where each plan is written when made and removed when dropped."""
        self._engine = engine
        self._book = book
        self.settings = settings
        self._clock = clock
        levels = LevelSettings(settings.domains, settings.nvlink, settings.topology)
        self.requirements = requirements or Requirements(cluster, levels, top_owner, members)
        self._fence_of = fence_of
        """The levels in use and what each gang asks of them."""
        measure = FitMeasure(cluster, engine, book, self._holds, priority, self.requirements)
        self.plans: dict[GangKey, Plan] = {}
        self._standing = Standing(cluster, engine, book, settings, clock)
        self._maker = PlanMaker(
            cluster, self.requirements, measure, members, ahead, self.plans, self.bound_of
        )
        self.history: deque[Decision] = deque(maxlen=10_000)
        """The last plans made, for explain-style audits and the gang proof."""
        self.bound_members: dict[GangKey, dict[PodKey, str]] = {}
        """Members this extender bound, per gang: they outlive a plan being dropped and redone,
        so a new plan only places the members still missing."""

    @property
    def reserved(self) -> dict[str, dict[GangKey, dict[str, int]]]:
        """node -> gang -> resources held for the gang's members not yet bound there."""
        return self._book.by_node

    # Filter

    def filter(self, pod: PodView, gang: Gang, names: list[str]) -> FilterOutcome | None:
        """The filter answer for a gang member; None when the pod is past the gang's size."""
        if self.complete(gang):
            return None
        if (refused := self.refusal(pod, gang)) is not None:
            return FilterOutcome([], {}, dict.fromkeys(names, refused))
        self._book.join(pod.key, gang.key)
        plan = self._current(gang, pod, names)
        if plan is None:
            reason = self.no_fit_reason(pod, gang)
            return FilterOutcome([], {}, dict.fromkeys(names, reason))
        plan, slot = self._member_slot(plan, pod)
        if plan is None:
            reason = self.no_fit_reason(pod, gang)
            return FilterOutcome([], {}, dict.fromkeys(names, reason))
        if slot is None:
            return None
        self.touch(plan)
        node = plan.slots[slot]
        if node not in names:
            return self._absent(plan, pod, node, names)
        plan.absent.pop(node, None)
        reason = f"gang {gang} has this member planned on {node} ({plan.describe()})"
        failed = dict.fromkeys(names, reason)
        del failed[node]
        return FilterOutcome([node], {}, failed)

    def touch(self, plan: Plan) -> None:
        """A member made progress: the plan does not expire yet."""
        plan.progress = self._clock()

    def stalled(self, plan: Plan) -> str | None:
        """Why the gang is given up at the bind barrier (extender/gangs/standing.py)."""
        return self._standing.stalled(plan)

    def _current(self, gang: Gang, pod: PodView, names: list[str] | None = None) -> Plan | None:
        plan = self.plans.get(gang.key)
        if plan is not None and (reason := self._standing.expired(plan)) is not None:
            log.info(reason, extra={"gang": str(gang)})
            self.drop(gang.key, reason)
            plan = None
        if plan is not None and not self._standing.still_fits(plan):
            log.info("plan of gang %s no longer fits; planning again", gang)
            self.drop(gang.key)
            plan = None
        return plan or self._plan(gang, pod, names=names)

    def attempt(self, gang: Gang, pod: PodView) -> str | None:
        """Plan the gang now if it fits (outside a filter call: a gang kube-scheduler's
        in-tree filters find no node for never reaches the extender's filter); None when it
        has a plan, else why it does not fit."""
        if self.complete(gang):
            return None
        if (refused := self.refusal(pod, gang)) is not None:
            return refused
        if self._current(gang, pod) is not None:
            return None
        return self.no_fit_reason(pod, gang)

    def _member_slot(self, plan: Plan, pod: PodView) -> tuple[Plan | None, int | None]:
        """The member's slot; in a plan redone first when its constraints are none the plan was
        made for (it was not in the cache when the gang was planned)."""
        cached = self._cluster.pod(*pod.key)
        rank = self._rank(plan, cached)
        if pod.key in plan.assigned or cached is None or not plan.constraints:
            return plan, plan.slot_of(pod.key, rank=rank)
        group = NodeConstraints.of(cached).key
        if group not in plan.groups() and len(plan.assigned) < len(plan.slots):
            log.info(
                "gang %s: member %s/%s has constraints the plan did not expect; planning again",
                plan.gang,
                *pod.key,
            )
            self.drop(plan.gang.key)
            replanned = self._plan(plan.gang, pod)
            if replanned is None:
                return None, None
            plan = replanned
        return plan, plan.slot_of(pod.key, group if plan.mixed else None, rank)

    def _rank(self, plan: Plan, cached: Json | None) -> int | None:
        """The member's rank, for a sliced plan (its slice's slots are its own)."""
        if not (plan.slice_size or plan.slice_sizes) or cached is None:
            return None
        if plan.gang.native is not None and plan.gang.native.children:
            return child_rank(plan.gang.native, cached)
        members = [cached, *self._members(plan.gang)]
        master = any(kubeflow.replica_type(_labels(p)) == kubeflow.MASTER for p in members)
        return rank_of(cached, plan.gang.size, master)

    def _absent(self, plan: Plan, pod: PodView, node: str, names: list[str]) -> FilterOutcome:
        if self.nominator is not None:
            reason = self.nominator.absent(str(plan.gang), pod.key, node, names)
            if reason is not None:
                return FilterOutcome([], {}, dict.fromkeys(names, reason))
        percentage = self.settings.percentage_of_nodes_to_score
        if not sampled(len(names), len(self._cluster.views), percentage):
            return self._ruled_out(plan, pod, node, names)
        limit = self.settings.absent_limit
        plan.absent[node] = plan.absent.get(node, 0) + 1
        if plan.absent[node] >= limit:
            log.warning(
                "gang %s: planned node %s keeps being absent; planning again", plan.gang, node
            )
            excluded = {n for n, count in plan.absent.items() if count >= limit}
            self.drop(plan.gang.key)
            replanned = self._plan(plan.gang, pod, excluded | plan.ruled_out)
            if replanned is not None:
                replanned.ruled_out = plan.ruled_out
        reason = sampled_reason(str(plan.gang), node, len(names))
        return FilterOutcome([], {}, dict.fromkeys(names, reason))

    def _ruled_out(self, plan: Plan, pod: PodView, node: str, names: list[str]) -> FilterOutcome:
        """kube-scheduler sent every node that passed its filters, without the planned one: the
        gang is planned again at once without it."""
        log.info(
            "gang %s: kube-scheduler ruled out planned node %s; planning again", plan.gang, node
        )
        avoided = plan.ruled_out | {node}
        self.drop(plan.gang.key)
        replanned = self._plan(plan.gang, pod, avoided)
        if replanned is not None:
            replanned.ruled_out = avoided
        reason = ruled_out_reason(str(plan.gang), node, len(names))
        return FilterOutcome([], {}, dict.fromkeys(names, reason))

    # Planning (extender/gangs/making.py)

    def _plan(
        self,
        gang: Gang,
        pod: PodView,
        excluded: Iterable[str] = (),
        names: list[str] | None = None,
    ) -> Plan | None:
        """A plan for the gang, made for `pod`; `names`, what kube-scheduler sent with it: the
        pod's slot is on one of them where the plan has one free (nominations on)."""
        made = self._maker.make(gang, pod, self._clock(), excluded)
        if made is None:
            return None
        plan = made.plan
        self.history.append(made.decision)
        self.plans[gang.key] = plan
        self._reserve(plan)
        self.records.put(record_of(plan))
        if self.nominator is not None:
            asking = None if names is None else (pod.key, names)
            self.nominator.place(plan, self._members(gang), self.member_hint, asking)
        log.info(
            "planned gang %s: %d pods on %d nodes in %s",
            gang,
            gang.size,
            len(set(plan.slots)),
            plan.domain,
            extra={"gang": str(gang)},
        )
        return plan

    def member_hint(self, plan: Plan, key: PodKey) -> tuple[Hashable | None, int | None]:
        """The member's group (in a plan of several) and its rank (in a sliced plan), to give
        it a slot of its own when a recorded plan is taken over."""
        cached = self._cluster.pod(*key)
        if cached is None:
            return None, None
        group = NodeConstraints.of(cached).key if plan.mixed else None
        return group, self._rank(plan, cached)

    def no_fit_reason(self, pod: PodView, gang: Gang) -> str:
        """Why the gang does not fit now, or can never fit as it asks, with the numbers (the
        filter's answer); a gang refused as such (its group missing or contradicted) says why."""
        return gang.refusal or self._maker.no_fit_reason(pod, gang)

    def refusal(self, pod: PodView, gang: Gang) -> str | None:
        """Why the gang may not be planned, hold or preempt: its declared members do not exist
        (yet), or it can never be placed as it asks (the numbers); None when it may, or when it
        has a plan."""
        planned = gang.key in self.plans
        if not planned and (absent := self.presence(gang, pod.key).refusal()) is not None:
            return absent
        return self._maker.refusal(pod, gang)

    def presence(self, gang: Gang, asking: PodKey | None = None) -> Presence:
        """How many of the gang's declared members exist (explain shows `summary()`); the
        member `asking` counts too when kube-scheduler sent it before the cache has it."""
        found = self._quorum.presence(gang, len(self.bound_of(gang)))
        if asking is not None and self._cluster.pod(*asking) is None:
            return replace(found, pending=found.pending + 1)
        return found

    # Reservations

    def _reserve(self, plan: Plan) -> None:
        """Hold a member's resources on each planned node, except for members bound there."""
        owners = {i: key for key, i in plan.assigned.items()}
        pending = [
            node
            for index, node in enumerate(plan.slots)
            if index not in owners or not self._standing.bound(owners[index])
        ]
        fence = NARROWEST if self._fence_of is None else self._fence_of(plan)
        self._book.hold(plan.gang.key, plan.domain, plan.slots, pending, self._need(plan), fence)

    def _need(self, plan: Plan) -> dict[str, int]:
        """What one member holds on its planned node."""
        return need_of(plan.member)

    def drop(self, gang: GangKey, reason: str | None = None) -> None:
        """Forget the gang's plan and remove its record; the binds waiting on it fail with
        `reason`; its members' nominations are taken back."""
        plan = self.plans.get(gang)
        if plan is not None and self.nominator is not None:
            self.nominator.withdraw(plan)
        self.forget(gang, reason)
        self.records.remove(gang)

    def forget(self, gang: GangKey, reason: str | None = None) -> None:
        """Forget the gang's plan here only, as `drop` without removing the record."""
        plan = self.plans.pop(gang, None)
        self._book.release(gang)
        self._standing.forget(gang)
        if plan is not None:
            plan.fail_waiting(reason or f"the plan of gang {plan.gang} was dropped")

    def bound_of(self, gang: Gang) -> dict[PodKey, str]:
        """Members bound and still running: those this extender bound, as the cache shows them."""
        known = self.bound_members.get(gang.key, {})
        return {k: node for k, node in known.items() if self._standing.bound(k)}

    def complete(self, gang: Gang) -> bool:
        """Enough members are bound: later pods of the gang are scheduled one by one."""
        return len(self.bound_of(gang)) >= gang.size

    def bound(self, pod: PodKey, gang: Gang, node: str) -> None:
        """A member was bound: its reservation is now real usage; a whole gang needs no plan."""
        self.bound_members.setdefault(gang.key, {})[pod] = node
        if self.nominator is not None:
            self.nominator.settled(pod)
        plan = self.plans.get(gang.key)
        if plan is None:
            return
        plan.waiting.pop(pod, None)
        if self.complete(gang):
            log.info("gang %s is bound whole", gang, extra={"gang": str(gang)})
            self.drop(gang.key)
        elif pod in plan.assigned and plan.slots[plan.assigned[pod]] == node:
            # One slot settled: a gang of 1,024 must not recompute its whole hold 1,024 times.
            self._book.settle(gang.key, node, self._need(plan))
        else:
            self._reserve(plan)

    def adopt(self, plan: Plan, bound: dict[PodKey, str]) -> None:
        """Take over a plan another process made (extender/gangs/resume.py rebuilt it), with
        the members bound so far; the record now names this process."""
        plan.created = plan.progress = self._clock()
        self.plans[plan.gang.key] = plan
        self.bound_members[plan.gang.key] = dict(bound)
        self._reserve(plan)
        self.records.put(record_of(plan))
        if self.nominator is not None:
            self.nominator.place(plan, self._members(plan.gang), self.member_hint)

    # Upkeep

    def sweep(self) -> None:
        """Forget deleted members; expire, release or shrink plans accordingly."""
        if self.nominator is not None:
            self.nominator.sweep()
        for gang, bound in list(self.bound_members.items()):
            for key in [k for k in bound if self._cluster.pod(*k) is None]:
                del bound[key]
            if not bound:
                del self.bound_members[gang]
        for key, plan in list(self.plans.items()):
            gone = [k for k in plan.assigned if self._cluster.pod(*k) is None]
            for k in gone:
                del plan.assigned[k]
                plan.arrivals.pop(k, None)
                waiter = plan.waiting.pop(k, None)
                if waiter is not None and not waiter.done():
                    waiter.set_exception(BindError(f"pod {k[0]}/{k[1]} was deleted"))
            if gone and not plan.assigned and not self.bound_of(plan.gang):
                log.info("every member of gang %s is gone; its plan is released", plan.gang)
                self.drop(key)
            elif (reason := self._standing.expired(plan)) is not None:
                log.info(reason, extra={"gang": str(plan.gang)})
                self.drop(key, reason)
            elif self.complete(plan.gang):
                self.drop(key)
            elif gone:
                self._reserve(plan)


def _labels(pod: Json) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}
