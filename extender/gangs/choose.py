"""Where a whole gang goes, from how many members fit on each candidate node. Pure: the planner
measures the candidates, this module only decides.

The gang goes to the narrowest network domain (node labels the admin lists, narrowest first,
then the whole cluster) whose nodes hold all the members still to place; among the domains of
that level, the tightest (fewest member slots in all, so bigger domains stay whole for bigger
gangs), then the best mean score; within it, the fewest domains of each narrower level that
hold the gang (the fullest first, then the tightest that holds the rest), and there the
best-scoring nodes, each filled with as many members as fit before the next one is used.

A gang may require a level (extender/levels/placement.py): then only the levels up to it are
tried, never the whole cluster; and it may ask for slices, consecutive ranks each inside one
domain of a level (extender/gangs/slices.py), planned with the same tightest-fit rule.

Members of one gang may be allowed different nodes (a master pinned to one pool, workers
tolerating a taint the master does not): each group of members with the same constraints is
then placed within the nodes it may use, the node capacity shared between the groups, the
group with the least capacity open to it first; a domain is viable only if every group fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from extender.cluster.model import NodeInfo
from extender.gangs.slices import cut, mean_score, slice_fill
from extender.levels.search import CLUSTER, Search
from extender.podview import PodView


@dataclass(frozen=True)
class Fit:
    """One candidate node, as the choice sees it."""

    count: int
    """Members that fit on the node."""
    score: float
    """The node's score for a member."""
    labels: Mapping[str, str]
    groups: frozenset[int] | None = None
    """The member groups that may use the node (indexes into the demands); None: all."""


Fits = Mapping[str, Fit]
"""node name -> its fit; only nodes where at least one member fits."""


@dataclass(frozen=True)
class Choice:
    domain: str
    nodes: list[str]
    """One node per member (a node appears once for each member it takes), best first."""
    groups: list[int] = field(default_factory=list)
    """The member group each of `nodes` is for; empty when the gang is one group."""


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
    return choose_for_groups(fits, (needed,), domains)


def choose_for_groups(fits: Fits, demands: Sequence[int], domains: Sequence[str]) -> Choice | None:
    """The domain and nodes for `demands[g]` members of each group g; None when no domain holds
    every group within the nodes it may use."""
    return choose_in(fits, demands, Search(tuple(domains)))


def choose_in(fits: Fits, demands: Sequence[int], search: Search) -> Choice | None:
    """As choose_for_groups, over the search's levels (and the cluster when it allows), each
    slice inside one domain of its level when the gang is sliced (a gang of one group)."""
    needed = sum(demands)
    sliced = search.sliced and len(demands) == 1
    for label in [*search.levels, *([CLUSTER] if search.cluster else [])]:
        viable = []
        for value, members in _domains(fits, label).items():
            if _capacity(fits, members) < needed:
                continue
            if not _viable(fits, members, demands, search if sliced else None):
                continue
            viable.append((_capacity(fits, members), -mean_score(fits, members), value, members))
        if viable:
            _, _, value, members = min(viable)
            if sliced:
                return Choice(value, [n for n, _ in _slots(fits, members, demands, search) or []])
            if len(demands) == 1:
                narrower = search.levels[: search.levels.index(label)] if label != CLUSTER else None
                members = [n for n in members if _admits(fits[n], 0)]  # what packing counts
                members = _packed(fits, members, needed, narrower or search.levels)
            slots = _fill(members, fits, demands)
            assert slots is not None
            return Choice(
                value, [n for n, _ in slots], [g for _, g in slots] if len(demands) > 1 else []
            )
    return None


def _packed(fits: Fits, members: list[str], needed: int, levels: Sequence[str]) -> list[str]:
    """The nodes of the domain to fill: at each level narrower than the domain's, widest first,
    the fewest of its domains within the last level's choice that hold the members
    (`_fewest`). A level is passed over where a node lacks its label or its domains are single
    nodes (a host level: choosing nodes is the fill's)."""
    usable = [label for label in reversed(levels) if _splits(fits, members, label)]
    for label in usable:
        groups: dict[str, list[str]] = {}
        for name in members:
            groups.setdefault(fits[name].labels[label], []).append(name)
        chosen = _fewest(fits, groups, needed, tightest=label == usable[-1])
        members = [n for v in chosen for n in groups[v]]
    return members


def _splits(fits: Fits, members: list[str], label: str) -> bool:
    values = [fits[n].labels.get(label) for n in members]
    return None not in values and len(set(values)) < len(values)


def _fewest(fits: Fits, groups: Mapping[str, list[str]], needed: int, tightest: bool) -> list[str]:
    """The fewest domains that hold `needed` members (as many as the fullest first take).
    Above the narrowest level, the fullest, the last of them the tightest that holds the rest:
    their domains below are the fullest too, so the narrowest level needs the fewest. At the
    narrowest, one by one the tightest that leaves the rest a count the fullest others still
    hold, so that whole domains stay whole for the next gang."""
    capacity = {value: _capacity(fits, names) for value, names in groups.items()}
    rank = {
        value: (capacity[value], -mean_score(fits, names), value) for value, names in groups.items()
    }
    fullest = sorted(groups, key=lambda v: (-capacity[v], rank[v][1:]))
    count, held = 0, 0
    while held < needed and count < len(fullest):
        held += capacity[fullest[count]]
        count += 1
    if not tightest:
        rest = needed - sum(capacity[v] for v in fullest[: count - 1])
        last = min(fullest[count - 1 :], key=lambda v: (capacity[v] < rest, rank[v]))
        return [*fullest[: count - 1], last]
    order = sorted(groups, key=rank.__getitem__)
    chosen: list[str] = []
    left = needed
    for slot in range(count):
        others = count - slot - 1
        place = {v: i for i, v in enumerate(fullest)}
        prefix = list(accumulate((capacity[v] for v in fullest), initial=0))
        for value in order:
            # What the fullest others hold; where it is one of them, the next one stands in.
            among = place[value] < others
            rest = prefix[others + 1] - capacity[value] if among else prefix[others]
            if capacity[value] + rest >= left:
                chosen.append(value)
                left -= capacity[value]
                order.remove(value)
                fullest.remove(value)
                break
    return chosen


def _viable(fits: Fits, members: list[str], demands: Sequence[int], search: Search | None) -> bool:
    if search is None:
        return _holds(fits, members, demands)
    return _slots(fits, members, demands, search) is not None


def _domains(fits: Fits, label: str) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name, fit in fits.items():
        value = CLUSTER if label == CLUSTER else fit.labels.get(label)
        if value is not None:
            groups.setdefault(value, []).append(name)
    return groups


def _slots(
    fits: Fits, members: list[str], demands: Sequence[int], search: Search
) -> list[tuple[str, int]] | None:
    assert search.slice_level is not None
    usable = [n for n in members if _admits(fits[n], 0)]
    sizes = cut(demands[0], search.slice_size, search.slice_sizes)
    nodes = slice_fill(usable, fits, search.slice_level, sizes)
    return None if nodes is None else [(n, 0) for n in nodes]


def _holds(fits: Fits, members: list[str], demands: Sequence[int]) -> bool:
    """Every group fits on the members' nodes open to it, the groups sharing their capacity."""
    if len(demands) == 1:
        return sum(fits[n].count for n in members if _admits(fits[n], 0)) >= demands[0]
    return _fill(members, fits, demands) is not None


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


def no_fit_reason(
    fits: Fits, needed: int, domains: Sequence[str] | Search, pod: PodView, gang: str
) -> str:
    """Why no plan could be made, with the best the narrowest level some node carries and the
    cluster offer (a gang that requires a level: the best of that level)."""
    search = domains if isinstance(domains, Search) else Search(tuple(domains))
    levels = search.levels if search.cluster else search.levels[-1:]
    best = ""
    for label in levels:
        counts = per_domain(fits, label)
        if counts:
            value, count = max(counts.items(), key=lambda item: (item[1], item[0]))
            best = f"best domain {value} fits {count}"
            break
    ask = f"{pod.gpus} GPU, {pod.rails} rails"
    if not search.cluster:
        within = f" inside one {search.levels[-1]} domain" if search.levels else ""
        return f"gang {gang} needs {needed} x ({ask}){within}: {best or 'no domain fits any'}"
    best = f"{best}, " if best else ""
    return f"gang {gang} needs {needed} x ({ask}): {best}cluster fits {_capacity(fits, fits)}"


def _capacity(fits: Fits, names: Sequence[str] | Fits) -> int:
    return sum(fits[n].count for n in names)


def _fill(members: list[str], fits: Fits, demands: Sequence[int]) -> list[tuple[str, int]] | None:
    """Slots (node, group): the group with the least capacity open to it first, each on its
    best-scoring nodes, each node filled with as many members as fit before the next one is
    used; None when a group does not fit."""
    ordered = sorted(members, key=lambda n: (-fits[n].score, -fits[n].count, n))
    open_to = {g: [n for n in ordered if _admits(fits[n], g)] for g in range(len(demands))}
    left = {n: fits[n].count for n in members}
    slots: list[tuple[str, int]] = []
    for group in sorted(open_to, key=lambda g: (sum(left[n] for n in open_to[g]), g)):
        placed = 0
        for name in open_to[group]:
            take = min(left[name], demands[group] - placed)
            left[name] -= take
            slots += [(name, group)] * take
            placed += take
            if placed >= demands[group]:
                break
        if placed < demands[group]:
            return None
    return slots


def _admits(fit: Fit, group: int) -> bool:
    return fit.groups is None or group in fit.groups
