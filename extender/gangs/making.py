"""Making one gang's plan: the members still to place and the groups of nodes they may use,
where they fit net of what plans hold and of what waiting gangs of a higher priority need, the
levels searched, the choice (extender/gangs/choose.py), and, when none fits, why.

The planner (extender/gangs/planner.py) keeps the plans this makes: it stores, reserves and
records each one, and steers members to their slots.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable, Iterable
from dataclasses import dataclass, replace
from functools import partial

from extender.book.records import constraint_spec
from extender.book.reservations import GangKey
from extender.cluster.model import Cluster
from extender.cluster.pods import PodKey, pod_key
from extender.gangs.choose import Choice, Fits, choose_in, narrowest_fit, no_fit_reason
from extender.gangs.fitting import FitMeasure
from extender.gangs.identity import Gang
from extender.gangs.plan import Plan
from extender.gangs.pools import MemberGroup, asks, member_groups
from extender.gangs.requirements import Requirements
from extender.gangs.settings import Decision
from extender.levels.search import Search
from extender.levels.vocabularies import Levels
from extender.podview import PodView
from kube_rdma.core.nodeconstraints import NodeConstraints
from kube_rdma.core.objects import Json

BoundOf = Callable[[Gang], dict[PodKey, str]]
"""A gang's members bound and still running, and their nodes."""


@dataclass(frozen=True)
class Made:
    plan: Plan
    decision: Decision


class PlanMaker:
    def __init__(
        self,
        cluster: Cluster,
        requirements: Requirements,
        measure: FitMeasure,
        members: Callable[[Gang], Iterable[Json]],
        ahead: Callable[[GangKey], list[tuple[Gang, PodView]]],
        planned: Container[GangKey],
        bound_of: BoundOf,
    ) -> None:
        """`members`: a gang's members not bound yet, from the pod cache; `ahead`: the waiting
        gangs of a higher priority, first first; `planned`: the gangs that have a plan."""
        self._cluster = cluster
        self._requirements = requirements
        self._measure = measure
        self._members = members
        self._ahead = ahead
        self._planned = planned
        self._bound_of = bound_of

    def make(
        self,
        gang: Gang,
        pod: PodView,
        now: float,
        excluded: Iterable[str] = (),
        raw: Json | None = None,
    ) -> Made | None:
        """The gang's plan, or None when it does not fit now. `raw`: the pod as kube-scheduler
        sent it, whose asks count while the cache lacks it."""
        bound = self._bound_of(gang)
        needed = gang.size - len(bound)
        groups = self.groups(gang, pod, bound, needed, raw)
        levels = self._requirements.levels()
        search = self.search(pod, gang, levels, sliced=not bound, raw=raw)
        fits = self._fits(pod, gang, excluded, groups)
        choice = choose_in(fits, [g.count for g in groups], search)
        if choice is None:
            return None
        self._requirements.check_spans(choice.nodes, levels)
        decision = Decision(gang, needed, choice.domain, narrowest_fit(fits, search.levels))
        plan = self._plan(gang, pod, now, bound, groups, search, choice)
        plan.honoured = {pod_key(p): asks(p) for p in self._seen(gang, pod, bound, raw)}
        return Made(plan, decision)

    def _plan(
        self,
        gang: Gang,
        pod: PodView,
        now: float,
        bound: dict[PodKey, str],
        groups: list[MemberGroup],
        search: Search,
        choice: Choice,
    ) -> Plan:
        plan = Plan(gang, pod, list(bound.values()) + choice.nodes, choice.domain, now, now)
        one = search.sliced and len(groups) == 1
        plan.slice_size, plan.slice_sizes = (
            (search.slice_size, search.slice_sizes) if one else (0, ())
        )
        for i, key in enumerate(bound):
            plan.assigned[key] = i
        planned_for = choice.groups or [0] * len(choice.nodes)
        plan.constraints = [None] * len(bound) + [groups[g].constraints for g in planned_for]
        plan.group_specs = self._group_specs(gang, pod, bound, groups)
        return plan

    def groups(
        self,
        gang: Gang,
        pod: PodView,
        bound: dict[PodKey, str],
        needed: int,
        raw: Json | None = None,
    ) -> list[MemberGroup]:
        waiting = self._waiting(gang, pod, bound, raw)
        settled = [p for key in bound if (p := self._cluster.pod(*key)) is not None]
        return member_groups(waiting, settled, needed, self._cluster.pod(*pod.key) or raw or {})

    def _waiting(
        self, gang: Gang, pod: PodView, bound: dict[PodKey, str], raw: Json | None
    ) -> list[Json]:
        """The members not bound yet: the cache's, and `raw` (the pod kube-scheduler sent)
        when the cache lacks it."""
        waiting = [p for p in self._members(gang) if pod_key(p) not in bound]
        if raw is not None and pod.key not in bound and all(pod_key(p) != pod.key for p in waiting):
            waiting.append(raw)
        return waiting

    def _seen(
        self, gang: Gang, pod: PodView, bound: dict[PodKey, str], raw: Json | None
    ) -> list[Json]:
        """The members whose asks a plan honours: those waiting and those bound."""
        settled = [p for key in bound if (p := self._cluster.pod(*key)) is not None]
        return self._waiting(gang, pod, bound, raw) + settled

    def _group_specs(
        self, gang: Gang, pod: PodView, bound: dict[PodKey, str], groups: list[MemberGroup]
    ) -> dict[Hashable, Json]:
        """Each group's constraints as a member of it has them in its pod spec (for the plan's
        record)."""
        wanted = {g.constraints.key for g in groups}
        found: dict[Hashable, Json] = {}
        candidates = [self._cluster.pod(*pod.key), *self._members(gang)]
        candidates += [self._cluster.pod(*key) for key in bound]
        for member in candidates:
            if member is not None and wanted - found.keys():
                key = NodeConstraints.of(member).key
                if key in wanted:
                    found.setdefault(key, constraint_spec(member))
        return found

    def _fits(
        self, pod: PodView, gang: Gang, excluded: Iterable[str], groups: list[MemberGroup]
    ) -> Fits:
        """Where the gang's members fit, net of what plans hold and of what waiting gangs of
        a higher priority need (set aside here, so that kube-scheduler's queue order alone
        does not decide which gang of two gets the room)."""
        aside: dict[str, dict[str, int]] = {}
        for other, member in self._ahead(gang.key):
            if other.key in self._planned:
                continue
            bound = self._bound_of(other)
            needed = other.size - len(bound)
            theirs = self.groups(other, member, bound, needed)
            fits = self._measure.fits(member, other, excluded, theirs, aside)
            search = self.search(member, other, self._requirements.levels(), sliced=not bound)
            choice = choose_in(fits, [g.count for g in theirs], search)
            for name in choice.nodes if choice else ():
                held = aside.setdefault(name, {})
                for resource, amount in need_of(member).items():
                    held[resource] = held.get(resource, 0) + amount
        return self._measure.fits(pod, gang, excluded, groups, aside)

    def no_fit_reason(self, pod: PodView, gang: Gang) -> str:
        """Why the gang does not fit now, or can never fit as it asks, with the numbers (the
        filter's answer)."""
        if (refused := self.refusal(pod, gang)) is not None:
            return refused
        bound = self._bound_of(gang)
        needed = gang.size - len(bound)
        fits = self._fits(pod, gang, (), self.groups(gang, pod, bound, needed))
        search = self.search(pod, gang, self._requirements.levels(), sliced=not bound)
        return no_fit_reason(fits, needed, search, pod, str(gang))

    def refusal(self, pod: PodView, gang: Gang) -> str | None:
        """Why the gang can never be placed as it asks (the numbers); None when it can, or
        when it has a plan."""
        if gang.key in self._planned:
            return None
        bound = self._bound_of(gang)
        needed = gang.size - len(bound)
        groups = partial(self.groups, gang, pod, bound, needed)
        return self._requirements.refusal(pod, gang, needed, groups)

    def search(
        self, pod: PodView, gang: Gang, levels: Levels, sliced: bool, raw: Json | None = None
    ) -> Search:
        """The gang's levels; unsliced once members are bound (their ranks' slots are taken)."""
        search = self._requirements.search(pod, gang, levels, raw)
        return search if sliced else replace(search, slice_level=None, slice_size=0, slice_sizes=())


def need_of(member: PodView) -> dict[str, int]:
    """What one member holds on its planned node."""
    return {member.gpu_resource: member.gpus, **member.rdma}
