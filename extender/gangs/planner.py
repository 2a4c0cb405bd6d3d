"""The plan keeper: a gang is planned whole when its first member is filtered, its nodes are held
for it, and its later members are steered to them.

- Planning: for each node, how many members fit (every filter passing, free GPUs and RDMA
  units after other gangs' reservations); extender/gangs/choose.py then picks the domain and
  the nodes.
- Reservation: later members are steered to their planned node, and every other pod sees the
  planned capacity as used (extender/gangs/reservations.py).
- Upkeep: a plan without progress for `plan_timeout` expires, and so does one whose members
  stopped arriving at the bind barrier for `barrier_progress_timeout`; a planned node that no
  longer fits or that kube-scheduler keeps leaving out of its candidates makes the plan be
  redone; members deleted release their slots; a gang fully bound needs no plan any more.

The bind barrier (extender/gangs/barrier.py) waits on the plans kept here.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from extender.cluster.model import Cluster, PodKey
from extender.cluster.source import BindError
from extender.engine import Engine, FilterOutcome
from extender.gangs.choose import Fit, Fits, choose, members_fitting, narrowest_fit, no_fit_reason
from extender.gangs.holds import HoldBook
from extender.gangs.identity import Gang
from extender.gangs.plan import Plan
from extender.gangs.records import MemoryRecords, PlanRecord, PlanRecords
from extender.gangs.reservations import GangKey, Reservations
from extender.podview import PodView
from kube_rdma.core import keys

log = logging.getLogger("kube_rdma.extender")


@dataclass(frozen=True)
class GangSettings:
    domains: tuple[str, ...] = (
        keys.LEAF,
        keys.SPINE,
        "topology.kubernetes.io/zone",
    )
    """Node labels of network domains, narrowest first."""
    plan_timeout: float = 120.0
    """Seconds without progress (a member filtered or reaching bind) before a plan expires."""
    barrier_timeout: float = 4.0
    """Seconds a member's bind request waits for the others; below kube-scheduler's
    httpTimeout. The member stays arrived after its request fails."""
    barrier_progress_timeout: float = 30.0
    """Seconds a gang waits at the barrier for its next member to arrive before it is given up
    (nothing bound, the plan dropped): the barrier's window grows with the gang as long as
    members keep coming."""
    absent_limit: int = 3
    """Calls in a row without a planned node among the candidates before the plan is redone."""


@dataclass(frozen=True)
class Decision:
    """One plan made: for whom, in which domain, and the most members any single domain of
    the narrowest level could have taken at that moment."""

    gang: Gang
    needed: int
    domain: str
    narrowest_fit: int


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
    ) -> None:
        """`holds` keeps the nodes held for waiting gangs from lower-priority gangs' plans;
        `priority` gives a gang's priority (extender/gangs/contention.py)."""
        self._holds = holds or HoldBook()
        self._priority = priority
        self._cluster = cluster
        self.records = records or MemoryRecords()
        """Where each plan is written when made and removed when dropped."""
        self._engine = engine
        self._book = book
        self.settings = settings
        self._clock = clock
        self.plans: dict[GangKey, Plan] = {}
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
        self._book.join(pod.key, gang.key)
        plan = self._current(gang, pod)
        if plan is None:
            reason = self._no_fit_reason(pod, gang)
            return FilterOutcome([], {}, dict.fromkeys(names, reason))
        slot = plan.slot_of(pod.key)
        if slot is None:
            return None
        self.touch(plan)
        node = plan.slots[slot]
        if node not in names:
            return self._absent(plan, pod, node, names)
        plan.absent.pop(node, None)
        reason = f"gang {gang} has this member planned on {node} ({plan.describe()})"
        return FilterOutcome([node], {}, {n: reason for n in names if n != node})

    def touch(self, plan: Plan) -> None:
        """A member made progress: the plan does not expire yet."""
        plan.progress = self._clock()

    def stalled(self, plan: Plan) -> str | None:
        """Why the gang is given up at the bind barrier: members arrived, but no new one for
        the progress timeout; None while it progresses (or has no member there yet)."""
        window = self.settings.barrier_progress_timeout
        if plan.opened or plan.last_arrival is None or self._clock() - plan.last_arrival <= window:
            return None
        return (
            f"gang {plan.gang}: {len(plan.arrivals)} of {plan.gang.size} members reached bind, "
            f"none new for {window:g}s; none is bound, the gang is planned again"
        )

    def _expired(self, plan: Plan) -> str | None:
        if self._clock() - plan.progress > self.settings.plan_timeout:
            return f"the plan of gang {plan.gang} expired without progress"
        return self.stalled(plan)

    def _current(self, gang: Gang, pod: PodView) -> Plan | None:
        plan = self.plans.get(gang.key)
        if plan is not None and (reason := self._expired(plan)) is not None:
            log.info(reason, extra={"gang": str(gang)})
            self.drop(gang.key, reason)
            plan = None
        if plan is not None and not self._still_fits(plan):
            log.info("plan of gang %s no longer fits; planning again", gang)
            self.drop(gang.key)
            plan = None
        return plan or self._plan(gang, pod)

    def _absent(self, plan: Plan, pod: PodView, node: str, names: list[str]) -> FilterOutcome:
        limit = self.settings.absent_limit
        plan.absent[node] = plan.absent.get(node, 0) + 1
        if plan.absent[node] >= limit:
            log.warning(
                "gang %s: planned node %s keeps being absent; planning again", plan.gang, node
            )
            excluded = {n for n, count in plan.absent.items() if count >= limit}
            self.drop(plan.gang.key)
            self._plan(plan.gang, pod, excluded)
        reason = (
            f"gang {plan.gang}: planned node {node} was not among the {len(names)} candidates "
            "kube-scheduler sent (set percentageOfNodesToScore: 100 for the RDMA scheduler)"
        )
        return FilterOutcome([], {}, dict.fromkeys(names, reason))

    def _still_fits(self, plan: Plan) -> bool:
        pending = [plan.slots[i] for key, i in plan.assigned.items() if not self._bound(key)]
        unassigned = [s for i, s in enumerate(plan.slots) if i not in plan.assigned.values()]
        for node in set(pending + unassigned):
            info = self._cluster.node(node)
            if info is None or not self._engine.verdict(plan.member, node, plan.gang.key).ok:
                return False
        return True

    # Planning

    def _plan(self, gang: Gang, pod: PodView, excluded: Iterable[str] = ()) -> Plan | None:
        bound = self.bound_of(gang)
        needed = gang.size - len(bound)
        fits = self._fits(pod, gang, excluded)
        choice = choose(fits, needed, self.settings.domains)
        if choice is None:
            return None
        narrowest = narrowest_fit(fits, self.settings.domains)
        self.history.append(Decision(gang, needed, choice.domain, narrowest))
        now = self._clock()
        plan = Plan(gang, pod, list(bound.values()) + choice.nodes, choice.domain, now, now)
        for i, key in enumerate(bound):
            plan.assigned[key] = i
        self.plans[gang.key] = plan
        self._reserve(plan)
        self.records.put(record_of(plan))
        log.info(
            "planned gang %s: %d pods on %d nodes in %s",
            gang,
            gang.size,
            len(set(plan.slots)),
            choice.domain,
            extra={"gang": str(gang)},
        )
        return plan

    def _fits(self, pod: PodView, gang: Gang, excluded: Iterable[str]) -> Fits:
        skip = set(excluded) | self._held_off(gang)
        names = [n.name for n in self._cluster.nodes() if n.name not in skip]
        passed = self._engine.filter(pod, names, gang.key).passed
        scores = self._engine.prioritize(pod, passed, gang.key)
        result = {}
        for name in passed:
            node = self._cluster.node(name)
            assert node is not None
            count = members_fitting(pod, node, self._book.held(name, gang.key))
            if count:
                result[name] = Fit(count, scores[name], node.labels)
        return result

    def _held_off(self, gang: Gang) -> set[str]:
        """Nodes held for another gang of the same or a higher priority."""
        if not self._holds:
            return set()
        priority = self._priority(gang.key)
        return {n for n in self._holds.nodes() if self._holds.blocking(n, priority, gang.key)}

    def _no_fit_reason(self, pod: PodView, gang: Gang) -> str:
        needed = gang.size - len(self.bound_of(gang))
        fits = self._fits(pod, gang, ())
        return no_fit_reason(fits, needed, self.settings.domains, pod, str(gang))

    # Reservations

    def _reserve(self, plan: Plan) -> None:
        """Hold a member's resources on each planned node, except for members bound there."""
        owners = {i: key for key, i in plan.assigned.items()}
        pending = [
            node
            for index, node in enumerate(plan.slots)
            if index not in owners or not self._bound(owners[index])
        ]
        self._book.hold(plan.gang.key, plan.domain, plan.slots, pending, self._need(plan))

    def _need(self, plan: Plan) -> dict[str, int]:
        """What one member holds on its planned node."""
        return {plan.member.gpu_resource: plan.member.gpus, **plan.member.rdma}

    def drop(self, gang: GangKey, reason: str | None = None) -> None:
        """Forget the gang's plan and remove its record; the binds waiting on it fail with
        `reason`."""
        self.forget(gang, reason)
        self.records.remove(gang)

    def forget(self, gang: GangKey, reason: str | None = None) -> None:
        """Forget the gang's plan here only, as `drop` without removing the record."""
        plan = self.plans.pop(gang, None)
        self._book.release(gang)
        if plan is not None:
            plan.fail_waiting(reason or f"the plan of gang {plan.gang} was dropped")

    def _bound(self, key: PodKey) -> bool:
        pod = self._cluster.pod(*key)
        return bool(pod and (pod.get("spec") or {}).get("nodeName"))

    def bound_of(self, gang: Gang) -> dict[PodKey, str]:
        """Members bound and still running: those this extender bound, as the cache shows them."""
        known = self.bound_members.get(gang.key, {})
        return {k: node for k, node in known.items() if self._bound(k)}

    def complete(self, gang: Gang) -> bool:
        """Enough members are bound: later pods of the gang are scheduled one by one."""
        return len(self.bound_of(gang)) >= gang.size

    def bound(self, pod: PodKey, gang: Gang, node: str) -> None:
        """A member was bound: its reservation is now real usage; a whole gang needs no plan."""
        self.bound_members.setdefault(gang.key, {})[pod] = node
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

    # Upkeep

    def sweep(self) -> None:
        """Forget deleted members; expire, release or shrink plans accordingly."""
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
            elif (reason := self._expired(plan)) is not None:
                log.info(reason, extra={"gang": str(plan.gang)})
                self.drop(key, reason)
            elif self.complete(plan.gang):
                self.drop(key)
            elif gone:
                self._reserve(plan)


def record_of(plan: Plan) -> PlanRecord:
    return PlanRecord(plan.gang.key, plan.gang.size, plan.domain, tuple(plan.slots))
