"""Where a whole gang goes, from how many members fit on each candidate node. Pure: the planner
measures the candidates, this module only decides.

The gang goes to the narrowest network domain (node labels the admin lists, narrowest first,
then the whole cluster) whose nodes hold all the members still to place; among the domains of
that level, the tightest (fewest member slots in all, so bigger domains stay whole for bigger
gangs), then the best mean score; within it the best-scoring nodes, each filled with as many
members as fit before the next one is used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender.cluster.model import NodeInfo
from extender.podview import PodView

CLUSTER = "cluster"
"""The widest domain: every node, whatever its labels."""


@dataclass(frozen=True)
class Fit:
    """One candidate node, as the choice sees it."""

    count: int
    """Members that fit on the node."""
    score: float
    """The node's score for a member."""
    labels: Mapping[str, str]


Fits = Mapping[str, Fit]
"""node name -> its fit; only nodes where at least one member fits."""


@dataclass(frozen=True)
class Choice:
    domain: str
    nodes: list[str]
    """One node per member (a node appears once for each member it takes), best first."""


def members_fitting(pod: PodView, node: NodeInfo, held: Mapping[str, int]) -> int:
    """How many pods like `pod` the node's free GPUs and RDMA units take, after what other
    gangs' plans hold there; a pod asking for neither fits any number of times (counted 1)."""
    counts = []
    for resource, need in [(pod.gpu_resource, pod.gpus), *pod.rdma.items()]:
        if need > 0:
            free = node.free(resource) - held.get(resource, 0)
            counts.append(free // need)
    return max(min(counts), 0) if counts else 1


def choose(fits: Fits, needed: int, domains: Sequence[str]) -> Choice | None:
    """The domain and nodes for `needed` members; None when no domain, not even the whole
    cluster, holds them all."""
    for label in [*domains, CLUSTER]:
        groups: dict[str, list[str]] = {}
        for name, fit in fits.items():
            value = CLUSTER if label == CLUSTER else fit.labels.get(label)
            if value is not None:
                groups.setdefault(value, []).append(name)
        viable = [
            (_capacity(fits, members), -_mean_score(fits, members), value, members)
            for value, members in groups.items()
            if _capacity(fits, members) >= needed
        ]
        if viable:
            _, _, value, members = min(viable)
            return Choice(value, _fill(members, fits, needed))
    return None


def per_domain(fits: Fits, label: str) -> dict[str, int]:
    """Domain (the label's value) -> the members its nodes take."""
    result: dict[str, int] = {}
    for fit in fits.values():
        value = fit.labels.get(label)
        if value is not None:
            result[value] = result.get(value, 0) + fit.count
    return result


def narrowest_fit(fits: Fits, domains: Sequence[str]) -> int:
    """The most members any one domain of the narrowest level could take."""
    if not domains:
        return _capacity(fits, fits)
    return max(per_domain(fits, domains[0]).values(), default=0)


def no_fit_reason(fits: Fits, needed: int, domains: Sequence[str], pod: PodView, gang: str) -> str:
    """Why no plan could be made, with the best the narrowest level and the cluster offer."""
    best = ""
    for label in domains[:1]:
        counts = per_domain(fits, label)
        if counts:
            value, count = max(counts.items(), key=lambda item: (item[1], item[0]))
            best = f"best domain {value} fits {count}, "
    ask = f"{pod.gpus} GPU, {pod.rails} rails"
    return f"gang {gang} needs {needed} x ({ask}): {best}cluster fits {_capacity(fits, fits)}"


def _capacity(fits: Fits, names: Sequence[str] | Fits) -> int:
    return sum(fits[n].count for n in names)


def _mean_score(fits: Fits, names: Sequence[str]) -> float:
    return sum(fits[n].score for n in names) / len(names) if names else 0.0


def _fill(members: list[str], fits: Fits, needed: int) -> list[str]:
    """Best-scoring nodes first, each filled with as many members as fit."""
    ordered = sorted(members, key=lambda n: (-fits[n].score, -fits[n].count, n))
    slots: list[str] = []
    for name in ordered:
        take = min(fits[name].count, needed - len(slots))
        slots += [name] * take
        if len(slots) >= needed:
            break
    return slots
