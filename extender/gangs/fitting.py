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
        open_to: dict[str, frozenset[int] | None] = {}
        for info in self._cluster.nodes():
            if info.name not in skip and ((which := open_groups(groups, info)) is None or which):
                open_to[info.name] = which
        passed = self._engine.filter(pod, list(open_to), gang.key).passed
        nominated = self._cluster.nominated_use(self._priority(gang.key))
        scores = self._engine.prioritize(pod, passed, gang.key)
        result = {}
        for name in passed:
            node = self._cluster.node(name)
            assert node is not None
            held = self._book.held(name, gang.key)
            for resource, amount in (aside.get(name) or {}).items():
                held[resource] = held.get(resource, 0) + amount
            for resource, amount in nominated.get(name, {}).items():
                held[resource] = held.get(resource, 0) + amount
            count = members_fitting(pod, node, held)
            if count:
                labels = self._requirements.labels(node, levels)
                result[name] = Fit(count, scores[name], labels, open_to[name])
        return result

    def held_off(self, gang: Gang) -> set[str]:
        """Nodes held for another gang of the same or a higher priority."""
        if not self._holds:
            return set()
        priority = self._priority(gang.key)
        return {n for n in self._holds.nodes() if self._holds.blocking(n, priority, gang.key)}
