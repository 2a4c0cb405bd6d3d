"""A gang's members grouped by the nodes they may use.

Members of one gang need not be allowed the same nodes: a PyTorchJob's master may carry a
nodeSelector its workers do not, or the workers tolerate a taint the master does not. The
planner places each group within the nodes its constraints admit (kube_rdma.core.
nodeconstraints); extender/gangs/choose.py shares node capacity between the groups.

The members are known from the pod cache. Members not created yet (a controller creates a big
gang's pods over seconds) are assumed to be like the most common group of those seen, bound
ones included; a member that turns out otherwise has the gang planned again when it arrives.
Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from extender.levels.placement import placement_of
from kube_rdma.core.nodeconstraints import NodeConstraints, NodeView
from kube_rdma.core.objects import Json


@dataclass(frozen=True)
class MemberGroup:
    constraints: NodeConstraints
    count: int
    """Members of the group still to place."""


def member_groups(
    waiting: Iterable[Json], bound: Iterable[Json], needed: int, fallback: Json
) -> list[MemberGroup]:
    """The groups of the `needed` members still to place, largest first: the members waiting
    (not bound), by their constraints, and those not seen yet in the most common group of the
    members waiting or bound (`fallback`'s when none is seen)."""
    compiled: dict[Hashable, NodeConstraints] = {}
    waiting_counts: Counter[Hashable] = Counter()
    seen: Counter[Hashable] = Counter()
    for pod, is_waiting in [*((p, True) for p in waiting), *((p, False) for p in bound)]:
        constraints = NodeConstraints.of(pod)
        compiled.setdefault(constraints.key, constraints)
        seen[constraints.key] += 1
        waiting_counts[constraints.key] += is_waiting
    if not seen:
        constraints = NodeConstraints.of(fallback)
        return [MemberGroup(constraints, needed)] if needed > 0 else []
    _share(waiting_counts, needed, [key for key, _ in seen.most_common()])
    groups = [MemberGroup(compiled[k], n) for k, n in waiting_counts.items() if n > 0]
    return sorted(groups, key=lambda g: -g.count)


def asks(pod: Json) -> Hashable:
    """What a member asks that its gang's plan must honour, as one hashable key: the nodes it
    may use (node selector, required node affinity, tolerations) and the network placement its
    annotations require or prefer (`kube-rdma.io/topology-required`, ...)."""
    return NodeConstraints.of(pod).key, placement_of(pod)


def _share(counts: Counter[Hashable], needed: int, by_commonness: Sequence[Hashable]) -> None:
    """Make the counts add up to `needed`: members not seen go to the most common group; more
    members waiting than places (pods past the gang's size) are taken off the most common."""
    excess = sum(counts.values()) - needed
    if excess < 0:
        counts[by_commonness[0]] -= excess
    for key in by_commonness:
        cut = min(max(excess, 0), counts[key])
        counts[key] -= cut
        excess -= cut


def open_groups(groups: Sequence[MemberGroup], node: NodeView) -> frozenset[int] | None:
    """The indexes of the groups that may use the node; None when every group may (a gang of
    one group, the usual case, builds no set)."""
    if len(groups) <= 1:
        if groups and groups[0].constraints.refusal(node) is not None:
            return frozenset()
        return None
    which = frozenset(i for i, g in enumerate(groups) if g.constraints.refusal(node) is None)
    return None if len(which) == len(groups) else which
