"""Gang placement: a gang is planned whole when its first member is filtered, its nodes are
reserved, and its members are bound all together or not at all.

- Planning: for each node, how many members fit (every filter passing, free GPUs and RDMA
  units after other gangs' reservations); then the narrowest network domain (node labels the
  admin lists, narrowest first, then the whole cluster) whose nodes hold all members, the
  tightest such domain first, the best-scoring nodes in it, filled one after the other.
- Reservation: later members are steered to their planned node, and every other pod sees the
  planned capacity as used.
- Barrier: each member's bind waits until all members reached bind, then all bind; when the
  barrier times out (below kube-scheduler's 5 s httpTimeout) every waiting bind fails, the plan
  is dropped and the pods go back to the queue.
- Upkeep: a plan without progress for `plan_timeout` expires; a planned node that no longer fits
  or that kube-scheduler keeps leaving out of its candidates makes the plan be redone; members
  deleted release their slots; a gang fully bound needs no plan any more.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from extender.cluster.model import Cluster, NodeInfo, PodKey
from extender.cluster.source import BindError
from extender.engine import Engine, FilterOutcome
from extender.gangs.identity import Gang
from extender.podview import PodView
from kube_rdma.core import keys

log = logging.getLogger("kube_rdma.extender")

CLUSTER = "cluster"


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
    """Seconds a member's bind waits for the others; below kube-scheduler's httpTimeout."""
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


@dataclass
class Plan:
    gang: Gang
    member: PodView
    slots: list[str]
    domain: str
    created: float
    progress: float
    assigned: dict[PodKey, int] = field(default_factory=dict)
    waiting: dict[PodKey, asyncio.Future[None]] = field(default_factory=dict)
    absent: dict[str, int] = field(default_factory=dict)

    def slot_of(self, pod: PodKey) -> int | None:
        index = self.assigned.get(pod)
        if index is None:
            taken = set(self.assigned.values())
            index = next((i for i in range(len(self.slots)) if i not in taken), None)
            if index is not None:
                self.assigned[pod] = index
        return index

    def describe(self) -> str:
        nodes = len(set(self.slots))
        return f"plan: {len(self.slots)} pods on {nodes} nodes in {self.domain}"


class Planner:
    def __init__(
        self,
        cluster: Cluster,
        engine: Engine,
        settings: GangSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cluster = cluster
        self._engine = engine
        self.settings = settings
        self._clock = clock
        self.plans: dict[tuple[str, str], Plan] = {}
        self.history: deque[Decision] = deque(maxlen=10_000)
        """The last plans made, for explain-style audits and the gang proof."""
        self.members: dict[PodKey, tuple[str, str]] = {}
        self.bound_members: dict[tuple[str, str], dict[PodKey, str]] = {}
        """Members this extender bound, per gang: they outlive a plan being dropped and redone,
        so a new plan only places the members still missing."""
        """Pods filtered as gang members -> their gang, for the locality score."""
        self.reserved: dict[str, dict[tuple[str, str], dict[str, int]]] = {}
        """node -> gang -> resources held for the gang's members not yet bound there."""
        engine.reservations = self.reserved

    # Filter

    def filter(self, pod: PodView, gang: Gang, names: list[str]) -> FilterOutcome | None:
        """The filter answer for a gang member; None when the pod is past the gang's size."""
        if self.complete(gang):
            return None
        self.members[pod.key] = gang.key
        plan = self._current(gang, pod)
        if plan is None:
            reason = self.no_fit_reason(pod, gang)
            return FilterOutcome([], {}, dict.fromkeys(names, reason))
        slot = plan.slot_of(pod.key)
        if slot is None:
            return None
        plan.progress = self._clock()
        node = plan.slots[slot]
        if node not in names:
            return self._absent(plan, pod, node, names)
        plan.absent.pop(node, None)
        reason = f"gang {gang} has this member planned on {node} ({plan.describe()})"
        return FilterOutcome([node], {}, {n: reason for n in names if n != node})

    def _current(self, gang: Gang, pod: PodView) -> Plan | None:
        plan = self.plans.get(gang.key)
        if plan is not None and self._clock() - plan.progress > self.settings.plan_timeout:
            log.info("plan of gang %s expired", gang)
            self.drop(gang.key)
            plan = None
        if plan is not None and not self._still_fits(plan):
            log.info("plan of gang %s no longer fits; planning again", gang)
            self.drop(gang.key)
            plan = None
        return plan or self._plan(gang, pod)

    def _absent(self, plan: Plan, pod: PodView, node: str, names: list[str]) -> FilterOutcome:
        plan.absent[node] = plan.absent.get(node, 0) + 1
        if plan.absent[node] >= self.settings.absent_limit:
            log.warning(
                "gang %s: planned node %s keeps being absent; planning again", plan.gang, node
            )
            excluded = {
                n for n, count in plan.absent.items() if count >= self.settings.absent_limit
            }
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
        bound = self._bound_members(gang)
        needed = gang.size - len(bound)
        fits = self._fits(pod, gang, excluded)
        choice = self._choose(fits, needed)
        if choice is None:
            return None
        domain, nodes = choice
        self.history.append(Decision(gang, needed, domain, self._narrowest_fit(fits)))
        now = self._clock()
        plan = Plan(gang, pod, list(bound.values()) + nodes, domain, now, now)
        for i, key in enumerate(bound):
            plan.assigned[key] = i
        self.plans[gang.key] = plan
        self._reserve(plan)
        log.info(
            "planned gang %s: %d pods on %d nodes in %s",
            gang,
            gang.size,
            len(set(plan.slots)),
            domain,
            extra={"gang": str(gang)},
        )
        return plan

    def _fits(
        self, pod: PodView, gang: Gang, excluded: Iterable[str]
    ) -> dict[str, tuple[int, float]]:
        """node -> (members that fit on it, its score for a member)."""
        skip = set(excluded)
        names = [n.name for n in self._cluster.nodes() if n.name not in skip]
        passed = self._engine.filter(pod, names, gang.key).passed
        scores = self._engine.prioritize(pod, passed, gang.key)
        result = {}
        for name in passed:
            node = self._cluster.node(name)
            assert node is not None
            count = self._members_on(pod, node, gang.key)
            if count:
                result[name] = (count, scores[name])
        return result

    def _members_on(self, pod: PodView, node: NodeInfo, gang: tuple[str, str]) -> int:
        held = self._engine.held(node.name, gang)
        counts = []
        for resource, need in [(pod.gpu_resource, pod.gpus), *pod.rdma.items()]:
            if need > 0:
                free = node.free(resource) - held.get(resource, 0)
                counts.append(free // need)
        return max(min(counts), 0) if counts else 1

    def _narrowest_fit(self, fits: Mapping[str, tuple[int, float]]) -> int:
        """The most members any one domain of the narrowest level could take."""
        if not self.settings.domains:
            return sum(count for count, _ in fits.values())
        per_domain: dict[str, int] = {}
        for name, (count, _) in fits.items():
            value = self._label(name, self.settings.domains[0])
            if value is not None:
                per_domain[value] = per_domain.get(value, 0) + count
        return max(per_domain.values(), default=0)

    def _choose(
        self, fits: Mapping[str, tuple[int, float]], needed: int
    ) -> tuple[str, list[str]] | None:
        for label in [*self.settings.domains, CLUSTER]:
            groups: dict[str, list[str]] = {}
            for name in fits:
                value = CLUSTER if label == CLUSTER else self._label(name, label)
                if value is not None:
                    groups.setdefault(value, []).append(name)
            viable = [
                (
                    sum(fits[n][0] for n in members),
                    -_mean(fits[n][1] for n in members),
                    value,
                    members,
                )
                for value, members in groups.items()
                if sum(fits[n][0] for n in members) >= needed
            ]
            if viable:
                _, _, value, members = min(viable)
                return value, _fill(members, fits, needed)
        return None

    def _label(self, node: str, label: str) -> str | None:
        info = self._cluster.node(node)
        return None if info is None else info.labels.get(label)

    def no_fit_reason(self, pod: PodView, gang: Gang) -> str:
        fits = self._fits(pod, gang, ())
        needed = gang.size - len(self._bound_members(gang))
        best = ""
        for label in self.settings.domains[:1]:
            per_domain: dict[str, int] = {}
            for name, (count, _) in fits.items():
                value = self._label(name, label)
                if value is not None:
                    per_domain[value] = per_domain.get(value, 0) + count
            if per_domain:
                value, count = max(per_domain.items(), key=lambda item: (item[1], item[0]))
                best = f"best domain {value} fits {count}, "
        ask = f"{pod.gpus} GPU, {pod.rails} rails"
        total = sum(count for count, _ in fits.values())
        return f"gang {gang} needs {needed} x ({ask}): {best}cluster fits {total}"

    # Reservations

    def _reserve(self, plan: Plan) -> None:
        for index, node in enumerate(plan.slots):
            key = next((k for k, i in plan.assigned.items() if i == index), None)
            if key is not None and self._bound(key):
                continue
            held = self.reserved.setdefault(node, {}).setdefault(plan.gang.key, {})
            for resource, need in [
                (plan.member.gpu_resource, plan.member.gpus),
                *plan.member.rdma.items(),
            ]:
                if need > 0:
                    held[resource] = held.get(resource, 0) + need

    def drop(self, gang: tuple[str, str]) -> None:
        plan = self.plans.pop(gang, None)
        for member in [k for k, g in self.members.items() if g == gang]:
            del self.members[member]
        for node in list(self.reserved):
            self.reserved[node].pop(gang, None)
            if not self.reserved[node]:
                del self.reserved[node]
        if plan is not None:
            for waiter in plan.waiting.values():
                if not waiter.done():
                    waiter.set_exception(BindError(f"the plan of gang {plan.gang} was dropped"))

    def refresh(self, gang: tuple[str, str]) -> None:
        """Recompute a plan's reservations (members bound since hold nothing more)."""
        plan = self.plans.get(gang)
        if plan is None:
            return
        for node in list(self.reserved):
            self.reserved[node].pop(gang, None)
            if not self.reserved[node]:
                del self.reserved[node]
        self._reserve(plan)

    def _bound(self, key: PodKey) -> bool:
        pod = self._cluster.pod(*key)
        return bool(pod and (pod.get("spec") or {}).get("nodeName"))

    def _bound_members(self, gang: Gang) -> dict[PodKey, str]:
        """Members bound and still running: those this extender bound, as the cache shows them."""
        known = self.bound_members.get(gang.key, {})
        return {k: node for k, node in known.items() if self._bound(k)}

    def complete(self, gang: Gang) -> bool:
        """Enough members are bound: later pods of the gang are scheduled one by one."""
        return len(self._bound_members(gang)) >= gang.size

    # Barrier

    async def barrier(self, pod: PodKey, gang: Gang, node: str, planned: bool = True) -> None:
        """Wait until every member of the gang reached bind; raises BindError for this member
        (and all the waiting ones) when that does not happen within the barrier timeout.

        `planned` is False for members without GPU or RDMA requests (an MPI launcher): they
        hold no slot but still count as arriving. A pod past the gang's size, or arriving when
        enough members are bound, binds without waiting."""
        if self.complete(gang):
            return
        plan = self.plans.get(gang.key)
        if plan is None:
            raise BindError(f"gang {gang} has no plan for this pod (it expired?); it is retried")
        if planned:
            if plan.slot_of(pod) is None:
                return  # more pods than the gang needs: this one is not waited for
            expected = plan.slots[plan.assigned[pod]]
            if expected != node:
                raise BindError(f"gang {gang} planned this pod on {expected}, not {node}")
        waiter = plan.waiting.get(pod)
        if waiter is None or waiter.done():
            waiter = plan.waiting[pod] = asyncio.get_running_loop().create_future()
        plan.progress = self._clock()
        if len(self._arrived(plan)) >= gang.size:
            for w in plan.waiting.values():
                if not w.done():
                    w.set_result(None)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.settings.barrier_timeout)
        except TimeoutError:
            if waiter.done():  # another member's timeout failed every waiting member already
                waiter.result()
            within = f"{self.settings.barrier_timeout:g}s"
            reason = (
                f"gang {gang}: {len(self._arrived(plan))} of {gang.size} members reached bind "
                f"within {within}; none is bound, the gang is planned again"
            )
            log.warning(reason, extra={"gang": str(gang)})
            for w in plan.waiting.values():
                if not w.done():
                    w.set_exception(BindError(reason))
            if self.plans.get(gang.key) is plan:
                self.drop(gang.key)
            raise BindError(reason) from None

    def _arrived(self, plan: Plan) -> set[PodKey]:
        """Members waiting at the barrier whose pods still exist unbound, and members bound:
        a deleted or recreated pod's wait does not count."""
        waiting = set()
        for key, waiter in plan.waiting.items():
            pod = self._cluster.pod(*key)
            if waiter.done() or pod is None or (pod.get("spec") or {}).get("nodeName"):
                continue
            waiting.add(key)
        return waiting | set(self._bound_members(plan.gang))

    def bound(self, pod: PodKey, gang: Gang, node: str) -> None:
        """A member was bound: its reservation is now real usage; a whole gang needs no plan."""
        self.bound_members.setdefault(gang.key, {})[pod] = node
        plan = self.plans.get(gang.key)
        if plan is None:
            return
        plan.waiting.pop(pod, None)
        if len(self._bound_members(gang)) >= gang.size:
            log.info("gang %s is bound whole", gang, extra={"gang": str(gang)})
            self.drop(gang.key)
        else:
            self.refresh(gang.key)

    # Upkeep

    def sweep(self) -> None:
        now = self._clock()
        for gang, bound in list(self.bound_members.items()):
            for key in [k for k in bound if self._cluster.pod(*k) is None]:
                del bound[key]
            if not bound:
                del self.bound_members[gang]
        for key, plan in list(self.plans.items()):
            gone = [k for k in plan.assigned if self._cluster.pod(*k) is None]
            for k in gone:
                del plan.assigned[k]
                waiter = plan.waiting.pop(k, None)
                if waiter is not None and not waiter.done():
                    waiter.set_exception(BindError(f"pod {k[0]}/{k[1]} was deleted"))
            if gone and not plan.assigned and not self._bound_members(plan.gang):
                log.info("every member of gang %s is gone; its plan is released", plan.gang)
                self.drop(key)
            elif now - plan.progress > self.settings.plan_timeout:
                log.info("plan of gang %s expired without progress", plan.gang)
                self.drop(key)
            elif len(self._bound_members(plan.gang)) >= plan.gang.size:
                self.drop(key)
            elif gone:
                self.refresh(key)

    # Locality

    def locality(self, pod: PodView, node: NodeInfo) -> float:
        """10 for a gang member on its plan's nodes; for other pods, 0 on nodes in the narrowest
        domain of a waiting gang's plan (keep singletons away from the room a gang needs)."""
        gang = self.members.get(pod.key)
        if gang is not None:
            plan = self.plans.get(gang)
            return 10.0 if plan is None or node.name in plan.slots else 0.0
        if not self.plans:
            return 10.0
        label = self.settings.domains[0] if self.settings.domains else None
        value = node.labels.get(label) if label else None
        for plan in self.plans.values():
            if plan.domain == value or node.name in self.reserved:
                return 0.0
        return 10.0


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def _fill(members: list[str], fits: Mapping[str, tuple[int, float]], needed: int) -> list[str]:
    """Best-scoring nodes first, each filled with as many members as fit."""
    ordered = sorted(members, key=lambda n: (-fits[n][1], -fits[n][0], n))
    slots: list[str] = []
    for name in ordered:
        take = min(fits[name][0], needed - len(slots))
        slots += [name] * take
        if len(slots) >= needed:
            break
    return slots
