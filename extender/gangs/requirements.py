"""The network levels a gang is planned over, and what it asks of them.

The planner asks here, for each gang it plans: which levels the cluster has (a `--topology`
preset, `auto` from the labels present, `--domain-label`, or a Kueue or KAI Topology object
watched live), what the job asks of them (extender/levels/placement.py), and whether a
requirement can ever be met. That last is judged against the nodes' total allocatable, not
their free capacity: more members than the largest domain could hold even empty is refused at
once with the numbers, while a requirement that only the cluster's load defeats waits.

A node's NVLink domain is its own level (`nvlink`), not the narrowest fabric level: an NVLink
partition need not sit under one leaf, and a domain whose nodes carry two tier-0 values is
logged, once per domain. A member with a ComputeDomain claim makes its gang require the NVLink
domain (extender/levels/compute_domains.py), resolved through the DRA objects the cluster
model keeps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from extender.cluster.model import Cluster, NodeInfo
from extender.gangs.identity import Gang
from extender.gangs.native import beyond_cluster, group_placement
from extender.gangs.pools import MemberGroup, open_groups
from extender.gangs.slices import cut
from extender.levels.compute_domains import nvlink_claim
from extender.levels.placement import Placement, placement_of
from extender.levels.search import Search
from extender.levels.vocabularies import NVLINK, Levels, auto_levels
from extender.podview import PodView
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")


@dataclass(frozen=True)
class LevelSettings:
    fabric: tuple[str, ...]
    nvlink: tuple[str, ...]
    source: str
    """A preset's name, `--domain-label`, or `auto` (the levels read from the nodes)."""


class GangLevels(Protocol):
    """The network levels each gang is planned over (`Requirements`): holds
    and preemption choose their domain among the same levels as the gang's plan will."""

    def levels(self) -> Levels: ...

    def search(self, pod: PodView, gang: Gang, levels: Levels | None = None) -> Search: ...

    def labels(self, node: NodeInfo, levels: Levels) -> Mapping[str, str]: ...


class Requirements:
    def __init__(
        self,
        cluster: Cluster,
        settings: LevelSettings,
        top_owner: Callable[[Json], Json | None] = lambda pod: None,
        members: Callable[[Gang], Iterable[Json]] = lambda gang: (),
    ) -> None:
        """`members`: the gang's members not bound yet, from the pod cache."""
        self._cluster = cluster
        self._members = members
        self._settings = settings
        self._top_owner = top_owner
        self.watched: Levels | None = None
        """The levels of the Topology object watched, once read; they win over the settings."""
        self._spans_checked: set[str] = set()
        self._auto_levels: tuple[int, Levels] | None = None

    def use(self, levels: Levels | None) -> None:
        """The levels of the Topology object watched (None: it is gone; the settings apply)."""
        self.watched = levels

    def levels(self) -> Levels:
        if self.watched is not None:
            return self.watched
        if self._settings.source == "auto":
            return self._auto()
        return Levels(self._settings.fabric, self._settings.nvlink, self._settings.source)

    def _auto(self) -> Levels:
        """The levels the nodes' labels say, read once per change of the cluster model."""
        generation = self._cluster.generation
        if self._auto_levels is None or self._auto_levels[0] != generation:
            levels = auto_levels(node.labels for node in self._cluster.nodes())
            self._auto_levels = (generation, levels)
        return self._auto_levels[1]

    def placement(
        self, pod: PodView, gang: Gang, levels: Levels | None = None, raw: Json | None = None
    ) -> Placement:
        """What the gang asks, read off the member; while the cache lacks it (a filter call may
        come before the watch delivers the pod), off `raw` (the pod as kube-scheduler sent it),
        else another member of the gang."""
        raw = self._cluster.pod(*pod.key) or raw or next(iter(self._members(gang)), None) or {}
        asked = group_placement(placement_of(raw, self._top_owner(raw) if raw else None), gang)
        claim = nvlink_claim(raw, self._cluster.dra, self._cluster.selectors) if raw else None
        return asked if claim is None else asked.needing_nvlink(claim, levels or self.levels())

    def search(
        self, pod: PodView, gang: Gang, levels: Levels | None = None, raw: Json | None = None
    ) -> Search:
        levels = levels or self.levels()
        return self.placement(pod, gang, levels, raw).search(levels)

    def labels(self, node: NodeInfo, levels: Levels) -> Mapping[str, str]:
        """The node's labels, with its NVLink domain under the `nvlink` level."""
        domain = levels.nvlink_domain(node.labels)
        return node.labels if domain is None else {**node.labels, NVLINK: domain}

    def refusal(
        self, pod: PodView, gang: Gang, needed: int, groups: Callable[[], list[MemberGroup]]
    ) -> str | None:
        """Why the gang can never be placed as it asks; None when it can, or asks nothing."""
        levels = self.levels()
        placement = self.placement(pod, gang, levels)
        if placement.problem is not None:
            return f"gang {gang}: {placement.problem}"
        if gang.native is not None:
            totals = self._allocatable(pod, groups(), levels)
            if (beyond := beyond_cluster(gang, pod, needed, totals)) is not None:
                return beyond
        if placement.required is None and placement.slice_level is None:
            return None
        search = placement.search(levels)
        checks = [] if search.cluster else [(search.levels[-1], needed, "")]
        if search.sliced and search.slice_level is not None:
            widest = max(cut(needed, search.slice_size, search.slice_sizes))
            checks.append((search.slice_level, min(widest, needed), "each slice of "))
        if not checks:
            return None
        totals = self._allocatable(pod, groups(), levels)
        why = f" for ComputeDomain claim {placement.nvlink_claim}" if placement.nvlink_claim else ""
        for level, want, what in checks:
            subject = f"gang {gang} requires {what}{want} x ({pod.gpus} GPU, {pod.rails} rails)"
            subject += f" inside one {level} domain{why if level == NVLINK else ''}"
            if (reason := _too_big(totals, level, want, subject, levels)) is not None:
                return reason
        return None

    def _allocatable(
        self, pod: PodView, groups: list[MemberGroup], levels: Levels
    ) -> list[tuple[int, Mapping[str, str]]]:
        """Members each usable node would take with nothing else on it, and its labels."""
        totals = []
        for node in self._cluster.nodes():
            if open_groups(groups, node) == frozenset():
                continue
            if (count := members_when_empty(pod, node)) > 0:
                totals.append((count, self.labels(node, levels)))
        return totals

    def check_spans(self, nodes: Iterable[str], levels: Levels) -> None:
        """Log each NVLink domain of `nodes`, checked once, whose nodes carry two tier-0 values."""
        if not levels.fabric:
            return
        fresh = set()
        for name in nodes:
            info = self._cluster.node(name)
            domain = levels.nvlink_domain(info.labels) if info else None
            if domain is not None and domain not in self._spans_checked:
                fresh.add(domain)
        if not fresh:
            return
        self._spans_checked |= fresh
        tiers: dict[str, set[str]] = {}
        for info in self._cluster.nodes():
            if (domain := levels.nvlink_domain(info.labels)) in fresh:
                tiers.setdefault(domain, set()).add(info.labels.get(levels.fabric[0], ""))
        for domain, values in sorted(tiers.items()):
            if len(values) > 1:
                shown = ", ".join(sorted(v or "(none)" for v in values))
                log.warning(
                    "NVLink domain %s spans %d values of %s: %s",
                    domain,
                    len(values),
                    levels.fabric[0],
                    shown,
                )

    def explain(self, pod: PodView, gang: Gang, nodes: Iterable[str]) -> Json:
        """The levels in use, what the gang asks, and where its planned `nodes` lie."""
        levels = self.levels()
        placement = self.placement(pod, gang, levels)
        in_use = levels.in_use(node.labels for node in self._cluster.nodes())
        body: Json = {"source": levels.source, "inUse": in_use, "asks": placement.describe()}
        if placement.needs_nvlink(levels) and NVLINK not in in_use:
            body["nvlink"] = f"not in use: no node {nvlink_absent(levels)}"
        if nodes:
            body["domains"] = self.domains_of(nodes, levels)
        return body

    def domains_of(self, nodes: Iterable[str], levels: Levels) -> dict[str, list[str]]:
        """Level -> the values the nodes carry there, for the levels in use (explain)."""
        infos = [i for n in set(nodes) if (i := self._cluster.node(n)) is not None]
        used = levels.in_use(node.labels for node in self._cluster.nodes())
        result = {}
        for level in used:
            values = {self.labels(i, levels).get(level) for i in infos}
            result[level] = sorted(v or "(none)" for v in values)
        return result


def nvlink_absent(levels: Levels) -> str:
    """What a node lacks to have an NVLink domain in the levels in use (after "no node ...")."""
    if not levels.nvlink:
        return f"has an NVLink domain: the levels in use ({levels.source}) name no NVLink label"
    labels = " or ".join(levels.nvlink)
    return f"carries an NVLink domain label of the levels in use ({levels.source}: {labels})"


def members_when_empty(pod: PodView, node: NodeInfo) -> int:
    """How many pods like `pod` the node's allocatable takes, with nothing else running."""
    counts = []
    for resource, need in [(pod.gpu_resource, pod.gpus), *pod.rdma.items()]:
        if need > 0:
            counts.append(node.allocatable.get(resource, 0) // need)
    return max(min(counts), 0) if counts else 1


def _too_big(
    totals: list[tuple[int, Mapping[str, str]]],
    level: str,
    want: int,
    subject: str,
    levels: Levels,
) -> str | None:
    per: dict[str, int] = {}
    for count, labels in totals:
        if (value := labels.get(level)) is not None:
            per[value] = per.get(value, 0) + count
    if not per:
        carried = nvlink_absent(levels) if level == NVLINK else f"carries {level}"
        return f"{subject}: no node it may use {carried}; it can never be placed"
    value, most = max(per.items(), key=lambda item: (item[1], item[0]))
    if most >= want:
        return None
    return (
        f"{subject}: the largest, {value}, holds {most} even with nothing else running; "
        "it can never be placed"
    )
