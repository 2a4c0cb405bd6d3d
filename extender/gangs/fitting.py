"""How many of a gang's members each node takes now: every filter passing, free GPUs and RDMA
units net of what other gangs' plans hold, what pods nominated by kube-scheduler's preemption
will take, and what waiting gangs of a higher priority are set aside (`aside`); nodes held for
another gang of the same or a higher priority are left out. The planner measures with this,
and extender/gangs/choose.py decides."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from extender.book.holds import HoldBook
from extender.book.reservations import GangKey, Reservations
from extender.cluster.model import Cluster
from extender.engine import Engine
from extender.gangs.choose import Fit, Fits, members_fitting
from extender.gangs.identity import Gang
from extender.gangs.pools import MemberGroup, open_groups
from extender.gangs.requirements import Requirements
from extender.podview import PodView

_NOTHING: dict[str, int] = {}
"""What nothing holds on a node (never written to)."""


class FitMeasure:
    def __init__(
        self,
        cluster: Cluster,
        engine: Engine,
        book: Reservations,
        holds: HoldBook,
        priority: Callable[[GangKey], int],
        requirements: Requirements,
    ) -> None:
        self._cluster = cluster
        self._engine = engine
        self._book = book
        self._holds = holds
        self._priority = priority
        self._requirements = requirements

    def fits(
        self,
        pod: PodView,
        gang: Gang,
        excluded: Iterable[str],
        groups: list[MemberGroup],
        aside: dict[str, dict[str, int]],
    ) -> Fits:
        skip = set(excluded) | self.held_off(gang)
        levels = self._requirements.levels()
        views = self._cluster.views
        names = [name for name in views if name not in skip]
        # The shape's verdicts first (a table, in C), the member groups' constraints then only
        # on the nodes that pass: a plan judges every node of the cluster.
        passed = self._engine.filter(pod, names, gang.key).passed
        open_to: dict[str, frozenset[int] | None] = {}
        for name in passed:
            which = open_groups(groups, views[name])
            if which is None or which:
                open_to[name] = which
        nominated = self._cluster.nominated_use(self._priority(gang.key))
        scores = self._engine.prioritize(pod, list(open_to), gang.key)
        by_node, labels_of = self._book.by_node, self._requirements.labels
        result = {}
        for name, which in open_to.items():
            node = views[name]
            if name in by_node or name in aside or name in nominated:
                held = self._book.held(name, gang.key)
                for resource, amount in (aside.get(name) or {}).items():
                    held[resource] = held.get(resource, 0) + amount
                for resource, amount in nominated.get(name, {}).items():
                    held[resource] = held.get(resource, 0) + amount
            else:
                held = _NOTHING
            count = members_fitting(pod, node, held)
            if count:
                result[name] = Fit(count, scores[name], labels_of(node, levels), which)
        return result

    def held_off(self, gang: Gang) -> set[str]:
        """Nodes held for another gang of the same or a higher priority."""
        if not self._holds:
            return set()
        priority = self._priority(gang.key)
        return {n for n in self._holds.nodes() if self._holds.blocking(n, priority, gang.key)}
