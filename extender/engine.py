"""The scheduling core: filter, prioritize and explain for one pod over a set of nodes.

It reads the cluster model and the weights, and does no I/O. A verdict or score depends only on
the pod's shape (what it asks) and the node's state (its rails, errors and resources), and most
nodes of a cluster share a few states, so both are computed once per (shape, state). On top of
that, per shape, every node's verdict and total are kept current as nodes change
(extender/answers.py), so a filter or prioritize call picks its names out of prebuilt tables
with set and dict operations that run in C, not a Python step per node.

Gang plans enter through a read-only view given at construction (extender/book/reservations.py):
what other gangs hold on a node counts as requested, which makes a node state of its own (laid
over the tables), and the locality criterion, which reads the plans, is scored per node only
while some gang is planned (at its neutral score, cached with the others, otherwise). Tables
with the plans laid over every node are kept per (shape, gang) while the plans stay the same
(the book's version) and brought up to date node by node as the cluster changes, so that the
thousands of members of one gang do not each redo what the plan changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from extender.answers import Totals, Verdicts
from extender.book.reservations import NO_PLANS, GangKey, GangPlans
from extender.bounded import CACHE_LIMIT, Recent, bound
from extender.cluster.model import Cluster, NodeInfo
from extender.filters import Filter, Verdict, fail
from extender.filters import registry as filter_registry
from extender.nameindex import Names
from extender.notes import node_notes
from extender.pairing import Rails, rails
from extender.podview import PodView
from extender.protocol import HostScores
from extender.scores import Criterion
from extender.scores import registry as score_registry
from extender.weights import Weights

NOT_CACHED = fail("node is not in the extender's cache yet (just added?); it is retried")
_TABLES = 32
"""Pod shapes whose answers for every node are kept (extender/answers.py), the most recently
used: a cluster runs a handful of shapes at a time, and a shape's two tables cost a byte per
node each (0.2 MB at 100,000 nodes; 32 shapes at most, 6.4 MB)."""
_OVERLAYS = 8
"""Tables with the gang plans laid over them kept, per (shape, gang) the most recently used: a
few gangs are placed at a time, and one such table costs what a shape's does."""


@dataclass(frozen=True)
class FilterOutcome:
    passed: list[str]
    failed: Mapping[str, str]
    unresolvable: Mapping[str, str]


@dataclass(frozen=True)
class Assessment:
    """One node as explain shows it: the verdict, the scores when it passed, and notes on the
    node that change neither (extender/notes.py)."""

    node: str
    verdict: Verdict
    scores: dict[str, float]
    total: float | None
    notes: tuple[str, ...] = ()


class Engine:
    """Filter, prioritize and explain over the cluster model, with the capacity gang plans hold
    counted as used by everyone but the gang itself (`plans`, read only)."""

    def __init__(
        self,
        cluster: Cluster,
        weights: Callable[[], Weights],
        plans: GangPlans = NO_PLANS,
        require_acceptance: bool = False,
    ) -> None:
        self._cluster = cluster
        self._weights = weights
        self._plans = plans
        self._filters: list[tuple[str, Filter]] = filter_registry(require_acceptance)
        self.require_acceptance = require_acceptance
        self._criteria: dict[str, Criterion] = score_registry(plans)
        self._live = {name: c for name, c in self._criteria.items() if c.live is not None}
        self._shapes: dict[tuple[Any, ...], int] = {}
        self._rails: dict[tuple[int, str | None, float | None], Rails] = {}
        self._verdicts: dict[tuple[int, int], Verdict] = {}
        self._scores: dict[tuple[int, int], dict[str, float]] = {}
        self._totals: dict[tuple[int, int, int], float] = {}
        self._held_states: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}
        self._names = Names()
        self._verdict_tables: Recent[Verdicts] = Recent(_TABLES)
        self._total_tables: Recent[Totals] = Recent(_TABLES)
        self._held_verdict_tables: Recent[_Overlay] = Recent(_OVERLAYS)
        self._held_total_tables: Recent[tuple[int, Totals | None]] = Recent(_OVERLAYS)

    def _shape(self, pod: PodView) -> int:
        number = self._shapes.get(pod.shape)
        if number is None:
            if len(self._shapes) >= CACHE_LIMIT:
                # Numbers are about to be handed out again: forget what the old ones stood for.
                for cache in (self._shapes, self._verdicts, self._scores, self._totals):
                    cache.clear()
            number = self._shapes[pod.shape] = len(self._shapes) + 1
        return number

    def _verdict_table(self, pod: PodView) -> Verdicts:
        """The pod's shape's verdict on every node, current."""
        table = self._verdict_tables.get(pod.shape)
        if table is None:
            table = Verdicts(self._names, lambda node: self._verdict(pod, self._shape(pod), node))
            self._verdict_tables.put(pod.shape, table)
        table.sync(self._cluster)
        return table

    def _total_table(self, pod: PodView, weights: Weights) -> Totals:
        """The pod's shape's total score on every node under `weights`, current."""
        table = self._total_tables.get(pod.shape)
        if table is None or table.weights is not weights:
            table = Totals(
                self._names,
                lambda node: self._cached_total(pod, self._shape(pod), node, weights),
                weights,
            )
            self._total_tables.put(pod.shape, table)
        table.sync(self._cluster)
        return table

    def _held_among(self, names: list[str]) -> list[str]:
        """Those of `names` on which some gang plan holds capacity."""
        held = self._plans.held_nodes
        return list(filter(held.__contains__, names)) if held else []

    def _view(self, node: NodeInfo, gang: GangKey | None) -> NodeInfo:
        """The node as a pod of `gang` sees it: what other gangs hold counts as requested."""
        held = self._plans.held(node.name, gang)
        if not held:
            return node
        requested = dict(node.requested)
        for resource, amount in held.items():
            requested[resource] = requested.get(resource, 0) + amount
        key = (node.state, tuple(sorted(held.items())))
        state = self._held_states.get(key)
        if state is None:
            bound(self._held_states)
            state = self._held_states[key] = -(len(self._held_states) + 1)
        return replace(node, requested=requested, state=state)

    def _node(self, name: str, gang: GangKey | None) -> NodeInfo | None:
        node = self._cluster.views.get(name)
        if node is not None and name in self._plans.held_nodes:
            return self._view(node, gang)
        return node

    def filter(
        self, pod: PodView, names: Iterable[str], gang: GangKey | None = None
    ) -> FilterOutcome:
        names = names if isinstance(names, list) else list(names)
        if not pod.relevant:
            return FilterOutcome(list(names), {}, {})
        table = self._verdict_table(pod)
        held = self._held_among(names)
        if held:
            table = self._held_verdicts(pod, gang, table, held)
        return FilterOutcome(*table.sort(names, NOT_CACHED.reason))

    def _held_verdicts(
        self, pod: PodView, gang: GangKey | None, table: Verdicts, held: list[str]
    ) -> Verdicts:
        """The shape's table with the held nodes judged as a pod of `gang` sees them (what
        other gangs hold counted). Asked a second time while the plans stay the same, every
        held node is laid over a copy that is then kept, brought up to date node by node as the
        cluster changes: a member of a gang planned on thousands of nodes would otherwise lay
        them all over a copy of the table at each call. The first time, only `held`, the held
        nodes among the call's names: plans changing at every call cost what they did."""
        key, version = (pod.shape, gang), self._plans.version
        found = self._held_verdict_tables.get(key)
        if found is None or found.version != version or found.base is not table:
            self._held_verdict_tables.put(key, _Overlay(version, table))
            return table.overlaid(self._held_verdict_map(pod, gang, held))
        changed = None if found.table is None else self._cluster.changed_since(found.changes)
        views = self._cluster.views
        if found.table is None or changed is None or not all(map(views.__contains__, changed)):
            found.table = table.overlaid(self._held_verdict_map(pod, gang, self._plans.held_nodes))
        else:
            shape = self._shape(pod)
            for name in dict.fromkeys(changed):
                node = self._node(name, gang)
                if node is not None:
                    found.table.place(name, self._verdict(pod, shape, node))
        found.changes = self._cluster.changes
        return found.table

    def _held_verdict_map(
        self, pod: PodView, gang: GangKey | None, held: Iterable[str]
    ) -> dict[str, Verdict]:
        shape, views = self._shape(pod), self._cluster.views
        return {
            name: self._verdict(pod, shape, self._view(views[name], gang))
            for name in held
            if name in views
        }

    def verdict(self, pod: PodView, name: str, gang: GangKey | None = None) -> Verdict:
        node = self._node(name, gang)
        if node is None:
            return NOT_CACHED
        if not pod.relevant:
            return Verdict(True)
        return self._verdict(pod, self._shape(pod), node)

    def verdict_on(self, pod: PodView, node: NodeInfo) -> Verdict:
        """The verdict on a node as given, not as the cluster has it (a node emptied of the
        pods preemption would evict); not cached."""
        return self._judge(pod, node) if pod.relevant else Verdict(True)

    def _verdict(self, pod: PodView, shape: int, node: NodeInfo) -> Verdict:
        """Nodes in the same state get the same verdict: judged once per shape and state."""
        key = (shape, node.state)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._judge(pod, node)
            bound(self._verdicts)
            self._verdicts[key] = verdict
        return verdict

    def _judge(self, pod: PodView, node: NodeInfo) -> Verdict:
        found = self.rails(pod, node)
        for _, check in self._filters:
            verdict = check(pod, node, found)
            if not verdict.ok:
                return verdict
        return Verdict(True)

    def rails(self, pod: PodView, node: NodeInfo) -> Rails | None:
        """The node's rails for the pod's link layer and rate; computed once per distinct
        rail signature (extender/cluster/model.py), not per node."""
        if node.topology is None:
            return None
        key = (node.rails_key, pod.link_layer, pod.min_rate)
        found = self._rails.get(key)
        if found is None:
            found = rails(node.topology, pod.link_layer, pod.min_rate)
            bound(self._rails)
            self._rails[key] = found
        return found

    def scores(self, pod: PodView, name: str, gang: GangKey | None = None) -> dict[str, float]:
        """Each criterion's 0-10 score for the node."""
        node = self._node(name, gang)
        if node is None:
            return {criterion: 0.0 for criterion in self._criteria}
        scores = dict(self._node_scores(pod, self._shape(pod), node))
        for criterion, live in self._live.items():
            scores[criterion] = live.score(pod, node, None)
        return scores

    def _node_scores(self, pod: PodView, shape: int, node: NodeInfo) -> dict[str, float]:
        """The scores of the pod's shape on the node's state; live criteria at their neutral."""
        key = (shape, node.state)
        scores = self._scores.get(key)
        if scores is None:
            found = self.rails(pod, node)
            scores = {
                name: c.neutral if c.live is not None else c.score(pod, node, found)
                for name, c in self._criteria.items()
            }
            bound(self._scores)
            self._scores[key] = scores
        return scores

    def total(self, scores: dict[str, float], weights: Weights | None = None) -> float:
        """The weighted mean of the criteria."""
        chosen = (weights or self._weights()).as_dict()
        return sum(scores[c] * w for c, w in chosen.items()) / sum(chosen.values())

    def prioritize(
        self, pod: PodView, names: Iterable[str], gang: GangKey | None = None
    ) -> dict[str, float]:
        names = names if isinstance(names, list) else list(names)
        if not pod.relevant:
            return dict.fromkeys(names, 0.0)
        weights = self._weights()
        table = self._total_table(pod, weights)
        live = self._live_weights(weights, pod)
        if not live and not self._held_among(names):
            return table.of(names, 0.0)
        overlaid = self._overlaid_totals(pod, gang, weights, live)
        if overlaid is not None:
            return overlaid.of(names, 0.0)
        result, held = table.of(names, 0.0), self._held_among(names)
        shape, views = self._shape(pod), self._cluster.views
        for name in dict.fromkeys(held if not live else names):
            node = views.get(name)
            if node is None:
                continue
            if name in self._plans.held_nodes:
                node = self._view(node, gang)
                result[name] = self._cached_total(pod, shape, node, weights)
            # The total counts the live criteria at neutral; put their scores in.
            for weight, criterion in live:
                result[name] += weight * (criterion.score(pod, node, None) - criterion.neutral)
        return result

    def answer_scores(
        self, pod: PodView, names: Iterable[str], gang: GangKey | None = None
    ) -> HostScores:
        """`prioritize` as the wire's HostPriorityList: the shape's pieces encoded in advance
        when nothing is laid over the table (no live criterion counts, no gang holds one of the
        names), otherwise `prioritize`'s scores encoded one by one."""
        names = names if isinstance(names, list) else list(names)
        if pod.relevant:
            weights = self._weights()
            live = self._live_weights(weights, pod)
            if not live and not self._held_among(names):
                return self._total_table(pod, weights).answer(names, 0.0)
            overlaid = self._overlaid_totals(pod, gang, weights, live)
            if overlaid is not None:
                return overlaid.answer(names, 0.0)
        return HostScores.of(self.prioritize(pod, names, gang))

    def _overlaid_totals(
        self,
        pod: PodView,
        gang: GangKey | None,
        weights: Weights,
        live: list[tuple[float, Criterion]],
    ) -> Totals | None:
        """The totals with the plans laid over every node (what other gangs hold, the live
        criteria's scores), as `prioritize` computes them name by name; None until asked twice
        while the plans stay the same, so that plans changing at every call cost no more than
        scoring the names.

        Live criteria read the pod only through its shape and the gang the plans know it as a
        member of (the locality score), so the members of one gang share a table: a gang of
        thousands scores the cluster once, not once a member."""
        key = (pod.shape, gang, self._plans.member_gang(pod.key), id(weights))
        version = self._plans.version
        found = self._held_total_tables.get(key)
        if found is not None and found[0] == version and found[1] is not None:
            found[1].sync(self._cluster)
            return found[1]
        if found is None or found[0] != version:
            self._held_total_tables.put(key, (version, None))  # once more, then a table
            return None
        shape = self._shape(pod)

        def total(node: NodeInfo) -> float:
            if node.name in self._plans.held_nodes:
                node = self._view(node, gang)
            result = self._cached_total(pod, shape, node, weights)
            for weight, criterion in live:
                result += weight * (criterion.score(pod, node, None) - criterion.neutral)
            return result

        table = Totals(self._names, total, weights)
        table.sync(self._cluster)
        self._held_total_tables.put(key, (version, table))
        return table

    def _cached_total(self, pod: PodView, shape: int, node: NodeInfo, weights: Weights) -> float:
        """The node's total for the shape, the live criteria at neutral; once per state."""
        key = (shape, node.state, id(weights))
        total = self._totals.get(key)
        if total is None:
            total = self.total(self._node_scores(pod, shape, node), weights)
            bound(self._totals)
            self._totals[key] = total
        return total

    def _live_weights(self, weights: Weights, pod: PodView) -> list[tuple[float, Criterion]]:
        """The live criteria that count now for the pod, with their share of the weights; a
        call per node each, so one whose score cannot differ from neutral (no gang planned, or
        none for this pod yet) is left out."""
        chosen = weights.as_dict()
        whole = sum(chosen.values())
        return [
            (chosen[name] / whole, c)
            for name, c in self._live.items()
            if chosen[name]
            and c.live is not None
            and c.live()
            and (c.live_for is None or c.live_for(pod))
        ]

    def explain(self, pod: PodView, gang: GangKey | None = None) -> list[Assessment]:
        """Every node of the cluster: passing nodes best first, then the failures."""
        result = []
        weights = self._weights()
        for node in self._cluster.nodes():
            verdict = self.verdict(pod, node.name, gang)
            scores = self.scores(pod, node.name, gang) if verdict.ok else {}
            total = self.total(scores, weights) if verdict.ok else None
            notes = node_notes(node.topology, node.devices)
            result.append(Assessment(node.name, verdict, scores, total, notes))
        result.sort(key=lambda a: (not a.verdict.ok, -(a.total or 0.0), a.node))
        return result


@dataclass
class _Overlay:
    """A shape's verdicts with the held nodes laid over them, for the plans' `version` and the
    cluster's `changes`; `table` None until asked again at that version."""

    version: int
    base: Verdicts
    changes: int = 0
    table: Verdicts | None = None
