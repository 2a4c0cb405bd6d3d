"""The scheduling core: filter, prioritize and explain for one pod over a set of nodes.

It reads the cluster model and the weights, and does no I/O. A verdict or score depends only on
the pod's shape (what it asks) and the node's state (its rails, errors and resources), and most
nodes of a cluster share a few states, so both are computed once per (shape, state) and looked
up for every other node: a call costs about one dict lookup per node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from extender.cluster.model import Cluster, NodeInfo
from extender.filters import Filter, Verdict, fail
from extender.filters import registry as filter_registry
from extender.pairing import Rails, rails
from extender.podview import PodView
from extender.scores import Scorer
from extender.scores import registry as score_registry
from extender.scores.locality import NEUTRAL as NEUTRAL_LOCALITY
from extender.weights import Weights

NOT_CACHED = fail("node is not in the extender's cache yet (just added?); it is retried")
_CACHE_LIMIT = 200_000


@dataclass(frozen=True)
class FilterOutcome:
    passed: list[str]
    failed: dict[str, str]
    unresolvable: dict[str, str]


@dataclass(frozen=True)
class Assessment:
    """One node as explain shows it: the verdict, and the scores when it passed."""

    node: str
    verdict: Verdict
    scores: dict[str, float]
    total: float | None


GangKey = tuple[str, str]
Reservations = Mapping[str, Mapping[GangKey, Mapping[str, int]]]
Locality = Callable[[PodView, NodeInfo], float]


class Engine:
    def __init__(self, cluster: Cluster, weights: Callable[[], Weights]) -> None:
        self._cluster = cluster
        self._weights = weights
        self._filters: list[tuple[str, Filter]] = filter_registry()
        self._scorers: dict[str, Scorer] = score_registry()
        self._shapes: dict[tuple[Any, ...], int] = {}
        self._rails: dict[tuple[int, str | None, float | None], Rails] = {}
        self._verdicts: dict[tuple[int, int], Verdict] = {}
        self._scores: dict[tuple[int, int], dict[str, float]] = {}
        self._totals: dict[tuple[int, int, int], float] = {}
        self._held_states: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}
        self.reservations: Reservations = {}
        """Capacity gang plans hold on nodes (extender/planner.py), seen as used by others."""
        self.locality: Locality | None = None
        """Replaces the locality criterion when gang placement is on."""
        self.locality_active: Callable[[], bool] = lambda: False
        """Whether `locality` can differ from the neutral score at all (some gang is planned);
        when not, prioritize skips it: it costs a call per node."""

    def _shape(self, pod: PodView) -> int:
        number = self._shapes.get(pod.shape)
        if number is None:
            _bound(self._shapes)
            number = self._shapes[pod.shape] = len(self._shapes) + 1
        return number

    def held(self, name: str, gang: GangKey | None = None) -> dict[str, int]:
        """Resources other gangs' plans hold on the node."""
        total: dict[str, int] = {}
        for owner, resources in (self.reservations.get(name) or {}).items():
            if owner != gang:
                for resource, amount in resources.items():
                    total[resource] = total.get(resource, 0) + amount
        return total

    def _view(self, node: NodeInfo, gang: GangKey | None) -> NodeInfo:
        """The node as a pod of `gang` sees it: what other gangs hold counts as requested."""
        held = self.held(node.name, gang)
        if not held:
            return node
        requested = dict(node.requested)
        for resource, amount in held.items():
            requested[resource] = requested.get(resource, 0) + amount
        key = (node.state, tuple(sorted(held.items())))
        state = self._held_states.get(key)
        if state is None:
            _bound(self._held_states)
            state = self._held_states[key] = -(len(self._held_states) + 1)
        return replace(node, requested=requested, state=state)

    def _node(self, name: str, gang: GangKey | None) -> NodeInfo | None:
        node = self._cluster.views.get(name)
        if node is not None and name in self.reservations:
            return self._view(node, gang)
        return node

    def filter(
        self, pod: PodView, names: Iterable[str], gang: GangKey | None = None
    ) -> FilterOutcome:
        passed: list[str] = []
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        if not pod.relevant:
            return FilterOutcome(list(names), failed, unresolvable)
        shape, views, reserved = self._shape(pod), self._cluster.views, self.reservations
        for name in names:
            node = views.get(name)
            if node is not None and name in reserved:
                node = self._view(node, gang)
            verdict = NOT_CACHED if node is None else self._verdict(pod, shape, node)
            if verdict.ok:
                passed.append(name)
            elif verdict.resolvable:
                failed[name] = verdict.reason
            else:
                unresolvable[name] = verdict.reason
        return FilterOutcome(passed, failed, unresolvable)

    def verdict(self, pod: PodView, name: str, gang: GangKey | None = None) -> Verdict:
        node = self._node(name, gang)
        if node is None:
            return NOT_CACHED
        if not pod.relevant:
            return Verdict(True)
        return self._verdict(pod, self._shape(pod), node)

    def _verdict(self, pod: PodView, shape: int, node: NodeInfo) -> Verdict:
        """Nodes in the same state get the same verdict: judged once per shape and state."""
        key = (shape, node.state)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._judge(pod, node)
            _bound(self._verdicts)
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
        rail signature (extender/cluster.py), not per node."""
        if node.topology is None:
            return None
        key = (node.rails_key, pod.link_layer, pod.min_rate)
        found = self._rails.get(key)
        if found is None:
            found = rails(node.topology, pod.link_layer, pod.min_rate)
            _bound(self._rails)
            self._rails[key] = found
        return found

    def scores(self, pod: PodView, name: str, gang: GangKey | None = None) -> dict[str, float]:
        """Each criterion's 0-10 score for the node."""
        node = self._node(name, gang)
        if node is None:
            return {criterion: 0.0 for criterion in self._scorers}
        scores = dict(self._node_scores(pod, self._shape(pod), node))
        if self.locality is not None:
            scores["locality"] = self.locality(pod, node)
        return scores

    def _node_scores(self, pod: PodView, shape: int, node: NodeInfo) -> dict[str, float]:
        key = (shape, node.state)
        scores = self._scores.get(key)
        if scores is None:
            found = self.rails(pod, node)
            scores = {c: scorer(pod, node, found) for c, scorer in self._scorers.items()}
            _bound(self._scores)
            self._scores[key] = scores
        return scores

    def total(self, scores: dict[str, float], weights: Weights | None = None) -> float:
        """The weighted mean of the criteria."""
        chosen = (weights or self._weights()).as_dict()
        return sum(scores[c] * w for c, w in chosen.items()) / sum(chosen.values())

    def prioritize(
        self, pod: PodView, names: Iterable[str], gang: GangKey | None = None
    ) -> dict[str, float]:
        if not pod.relevant:
            return {name: 0.0 for name in names}
        shape, views, weights = self._shape(pod), self._cluster.views, self._weights()
        version, reserved = id(weights), self.reservations
        w_locality = weights.locality / sum(weights.as_dict().values())
        locality = self.locality if w_locality and self.locality_active() else None
        result = {}
        for name in names:
            node = views.get(name)
            if node is None:
                result[name] = 0.0
                continue
            if name in reserved:
                node = self._view(node, gang)
            key = (shape, node.state, version)
            total = self._totals.get(key)
            if total is None:
                total = self.total(self._node_scores(pod, shape, node), weights)
                _bound(self._totals)
                self._totals[key] = total
            if locality is not None:
                # The cached total counts the neutral locality score; put the real one in.
                total += w_locality * (locality(pod, node) - NEUTRAL_LOCALITY)
            result[name] = total
        return result

    def explain(self, pod: PodView, gang: GangKey | None = None) -> list[Assessment]:
        """Every node of the cluster: passing nodes best first, then the failures."""
        result = []
        weights = self._weights()
        for node in self._cluster.nodes():
            verdict = self.verdict(pod, node.name, gang)
            scores = self.scores(pod, node.name, gang) if verdict.ok else {}
            total = self.total(scores, weights) if verdict.ok else None
            result.append(Assessment(node.name, verdict, scores, total))
        result.sort(key=lambda a: (not a.verdict.ok, -(a.total or 0.0), a.node))
        return result


def _bound(cache: dict[Any, Any]) -> None:
    """Caches are keyed by interned states that only grow; start over past a size limit."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
