"""The scheduling core: filter, prioritize and explain for one pod over a set of nodes.

It reads the cluster model and the weights, and does no I/O. Per node and pod requirement the
rail summary (extender/pairing.py) is computed once per topology document and reused; verdicts
are cached per pod shape and node view, so the members of a gang, which share a shape, cost one
evaluation per node between cluster changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from extender.cluster import Cluster, NodeInfo
from extender.filters import Filter, Verdict, fail
from extender.filters import registry as filter_registry
from extender.pairing import Rails, rails
from extender.podview import PodView
from extender.scores import Scorer
from extender.scores import registry as score_registry
from extender.topology import Topology
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


class Engine:
    def __init__(self, cluster: Cluster, weights: Callable[[], Weights]) -> None:
        self._cluster = cluster
        self._weights = weights
        self._filters: list[tuple[str, Filter]] = filter_registry()
        self._scorers: dict[str, Scorer] = score_registry()
        self._rails: dict[tuple[int, str | None, float | None], tuple[Topology, Rails]] = {}
        self._verdicts: dict[tuple[Any, str], tuple[NodeInfo, Verdict]] = {}

    def filter(self, pod: PodView, names: Iterable[str]) -> FilterOutcome:
        passed, failed, unresolvable = [], {}, {}
        for name in names:
            verdict = self.verdict(pod, name)
            if verdict.ok:
                passed.append(name)
            elif verdict.resolvable:
                failed[name] = verdict.reason
            else:
                unresolvable[name] = verdict.reason
        return FilterOutcome(passed, failed, unresolvable)

    def verdict(self, pod: PodView, name: str) -> Verdict:
        node = self._cluster.node(name)
        if node is None:
            return NOT_CACHED
        if not pod.relevant:
            return Verdict(True)
        key = (pod.shape, name)
        cached = self._verdicts.get(key)
        if cached is not None and cached[0] is node:
            return cached[1]
        verdict = self._judge(pod, node)
        if len(self._verdicts) > _CACHE_LIMIT:
            self._verdicts.clear()
        self._verdicts[key] = (node, verdict)
        return verdict

    def _judge(self, pod: PodView, node: NodeInfo) -> Verdict:
        found = self.rails(pod, node)
        for _, check in self._filters:
            verdict = check(pod, node, found)
            if not verdict.ok:
                return verdict
        return Verdict(True)

    def rails(self, pod: PodView, node: NodeInfo) -> Rails | None:
        """The node's rails for the pod's link layer and rate, computed once per document."""
        topology = node.topology
        if topology is None:
            return None
        key = (id(topology), pod.link_layer, pod.min_rate)
        cached = self._rails.get(key)
        if cached is not None and cached[0] is topology:
            return cached[1]
        found = rails(topology, pod.link_layer, pod.min_rate)
        if len(self._rails) > _CACHE_LIMIT:
            self._rails.clear()
        self._rails[key] = (topology, found)
        return found

    def scores(self, pod: PodView, name: str) -> dict[str, float]:
        """Each criterion's 0-10 score for the node."""
        node = self._cluster.node(name)
        if node is None:
            return {criterion: 0.0 for criterion in self._scorers}
        found = self.rails(pod, node)
        return {criterion: scorer(pod, node, found) for criterion, scorer in self._scorers.items()}

    def total(self, scores: dict[str, float]) -> float:
        """The weighted mean of the criteria."""
        weights = self._weights().as_dict()
        weight_sum = sum(weights.values())
        return sum(scores[c] * w for c, w in weights.items()) / weight_sum

    def prioritize(self, pod: PodView, names: Iterable[str]) -> dict[str, float]:
        if not pod.relevant:
            return {name: 0.0 for name in names}
        return {name: self.total(self.scores(pod, name)) for name in names}

    def explain(self, pod: PodView) -> list[Assessment]:
        """Every node of the cluster: passing nodes best first, then the failures."""
        result = []
        for node in self._cluster.nodes():
            verdict = self.verdict(pod, node.name)
            scores = self.scores(pod, node.name) if verdict.ok else {}
            total = self.total(scores) if verdict.ok else None
            result.append(Assessment(node.name, verdict, scores, total))
        result.sort(key=lambda a: (not a.verdict.ok, -(a.total or 0.0), a.node))
        return result
