"""A CompositePodGroup (scheduling.k8s.io/v1alpha3, 1.37) planned as one gang.

PodGroups and CompositePodGroups name their parent in `spec.parentCompositePodGroupName`, in
their own namespace. kube-scheduler walks a pod's PodGroup up to the root of its hierarchy and
schedules the hierarchy together (pkg/scheduler, workloadForest.validateHierarchy and
collectSubtrees at master): an ancestor not observed yet makes the pods wait; a cycle, or a
branch deeper than WorkloadMaxTreeDepth counting the root as the first level, makes them
unschedulable.

The gang is the highest CompositePodGroup above the pod's PodGroup whose gang policy, and that of
every CompositePodGroup between them, binds its children to be placed together: its members
are the pods of every PodGroup under it, its size their minCounts summed, each PodGroup a slice
of it. A composite's `minGroupCount` children must exist before it acts; kube-rdma then plans
all the children there are, which is at least what kube-scheduler admits. Its topology is the
level of the whole gang, its PodGroups' the level of each slice (one level for all of them; a
PodGroup without one is kept inside one domain of its siblings' level too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from kube_rdma.core.frameworks.kubernetes_scheduling import (
    COMPOSITE,
    MAX_TREE_DEPTH,
    NativeGroup,
)

Children = Mapping[str, Sequence[NativeGroup]]
"""A CompositePodGroup's name -> the groups that name it as their parent (one namespace)."""


def gang_group(
    leaf: NativeGroup, composites: Mapping[str, NativeGroup], children: Children
) -> NativeGroup:
    """The group the pods of PodGroup `leaf` are a gang of: `leaf` itself, the CompositePodGroup
    with its PodGroups as `children`, or `leaf` with the `problem` of its hierarchy."""
    if not leaf.parent or leaf.min_count is None:
        return leaf
    path: list[NativeGroup] = [leaf]
    while path[-1].parent:
        name = path[-1].parent
        above = [g.name for g in path[1:]]
        if name in above:
            cycle = " -> ".join([*above[above.index(name) :], name])
            return _refused(leaf, f"CompositePodGroups {cycle} form a cycle")
        parent = composites.get(name)
        if parent is None:
            why = (
                f"its {_named(path[-1])} names CompositePodGroup {name}, which does not exist "
                "yet; waiting for it, as kube-scheduler does"
            )
            return replace(leaf, problem=why, waits=True)
        path.append(parent)
    if (deep := _too_deep(path[-1], children)) is not None:
        return _refused(leaf, deep)
    unit = None
    for group in path[1:]:
        if group.min_group_count is None:
            break
        unit = group
    return leaf if unit is None else _planned(leaf, unit, children)


def _planned(leaf: NativeGroup, unit: NativeGroup, children: Children) -> NativeGroup:
    leaves: list[NativeGroup] = []
    for group in _descend(unit, children):
        if group.kind != COMPOSITE:
            if group.min_count is not None:
                leaves.append(group)
            continue
        if group is not unit and group.topology:
            why = (
                f"{_named(group)} requires topology {group.topology[0]!r} inside {_named(unit)}: "
                "kube-rdma reads a hierarchy's topology at its gang's CompositePodGroup and its "
                "PodGroups only"
            )
            return _refused(leaf, why)
        kids = children.get(group.name, ())
        if group.min_group_count is not None and len(kids) < group.min_group_count:
            named = ", ".join(sorted(k.name for k in kids)) or "none"
            why = (
                f"{_named(group)} needs minGroupCount {group.min_group_count} child groups, "
                f"{len(kids)} exist ({named}); waiting for the rest, as kube-scheduler does"
            )
            return replace(leaf, problem=why, waits=True)
    levels = {g.topology[0]: g for g in leaves if g.topology}
    if len(levels) > 1:
        (one, a), (two, b) = sorted(levels.items())[:2]
        why = (
            f"its PodGroups {a.name} (topology {one!r}) and {b.name} (topology {two!r}) under "
            f"{_named(unit)} ask different levels; kube-rdma places each PodGroup of a "
            "CompositePodGroup as a slice, all in one level: make them agree"
        )
        return _refused(leaf, why)
    total = sum(g.min_count or 0 for g in leaves)
    return replace(unit, min_count=total, children=tuple(leaves))


def _descend(root: NativeGroup, children: Children) -> list[NativeGroup]:
    """The subtree, depth first, each group's children in natural name order."""
    found = [root]
    if root.kind == COMPOSITE:
        for child in sorted(children.get(root.name, ()), key=lambda g: _natural(g.name)):
            found += _descend(child, children)
    return found


def _too_deep(root: NativeGroup, children: Children) -> str | None:
    """The deepest branch below `root` when longer than MAX_TREE_DEPTH levels."""
    longest: list[NativeGroup] = []
    stack: list[list[NativeGroup]] = [[root]]
    while stack:
        branch = stack.pop()
        if len(branch) > len(longest):
            longest = branch
        if branch[-1].kind == COMPOSITE and len(branch) <= MAX_TREE_DEPTH:
            stack += [[*branch, c] for c in children.get(branch[-1].name, ())]
    if len(longest) <= MAX_TREE_DEPTH:
        return None
    names = " -> ".join(g.name for g in longest)
    return (
        f"the hierarchy under CompositePodGroup {root.name} is {len(longest)} levels deep "
        f"({names}), more than the {MAX_TREE_DEPTH} kube-scheduler allows (WorkloadMaxTreeDepth)"
    )


def _refused(leaf: NativeGroup, why: str) -> NativeGroup:
    return replace(leaf, problem=f"{why}; it is never placed")


def _named(group: NativeGroup) -> str:
    return f"{group.kind} {group.name}"


def _natural(name: str) -> tuple[tuple[int, str], ...]:
    """`job-2` before `job-10`."""
    return tuple((int(p), "") if p.isdigit() else (0, p) for p in re.split(r"(\d+)", name))
