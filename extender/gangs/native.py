"""What a Kubernetes scheduling.k8s.io group (extender/gangs/identity.py `Gang.native`) asks of
the planner beyond its size, and how explain shows it.

- Topology: the group's `schedulingConstraints.topology[].key` (a node label; the API allows
  one) is the level the whole gang must be placed inside, as `kube-rdma.io/topology-required`
  names one (extender/levels/placement.py). A pod whose own topology annotation names another
  level is refused, naming both.
- Size: a group whose minCount the whole cluster could never hold, even empty, is refused at
  once with the numbers, rather than waiting for ever.
- Mode: whether kube-scheduler's GangScheduling holds the gang (`held`: no bind barrier of the
  extender's, --native-gang-scheduling) or the extender's barrier does.
- Slices: a CompositePodGroup planned as one gang has each of its PodGroups as a slice, in
  order, each inside one domain of their topology level (kube-rdma.io/topology-slice-required
  with a size per slice); a member's rank is its PodGroup's first slot plus its index in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from extender.gangs.identity import Gang
from extender.levels.placement import Placement
from extender.levels.ranks import rank_of
from extender.podview import PodView
from kube_rdma.core.frameworks.kubernetes_scheduling import NativeGroup, group_ref
from kube_rdma.core.objects import Json

HELD = (
    "kube-scheduler's GangScheduling holds the gang (Permit or the PodGroup cycle); "
    "no extender bind barrier"
)
BARRIER = "the extender's bind barrier holds the gang (--native-gang-scheduling=off)"


def group_placement(asked: Placement, gang: Gang) -> Placement:
    """The placement read off the pod, with the group's topology constraint as its required
    level when the pod asks none; a problem when the pod requires another level."""
    group = gang.native
    if group is None:
        return asked
    placed = _sliced(asked, group)
    if not group.topology:
        return placed
    key = group.topology[0]
    if placed.source == "none":
        return replace(placed, required=key, source=f"{group.kind} {group.api_version}")
    if placed.required is not None and placed.required != key:
        problem = (
            f"{placed.source} requires topology {placed.required!r}, but its {group} requires "
            f"{key!r} (schedulingConstraints.topology); make them agree"
        )
        return replace(placed, problem=problem)
    return placed


def _sliced(asked: Placement, group: NativeGroup) -> Placement:
    """A CompositePodGroup's PodGroups as the gang's slices, in their topology level."""
    level = slice_level(group)
    if level is None:
        return asked
    sizes = tuple(g.min_count or 0 for g in group.children)
    return replace(asked, slice_level=level, slice_size=0, slice_sizes=sizes)


def slice_level(group: NativeGroup) -> str | None:
    """The level each PodGroup of a CompositePodGroup is placed inside; None when none says."""
    return next((g.topology[0] for g in group.children if g.topology), None)


def child_rank(group: NativeGroup, pod: Json) -> int | None:
    """A member's rank in a CompositePodGroup's gang: the first slot of its PodGroup's slice,
    plus its index within the PodGroup where its labels give one."""
    ref = group_ref(pod.get("spec") or {})
    first = 0
    for child in group.children:
        size = child.min_count or 0
        if ref is not None and child.name == ref.name:
            within = rank_of(pod, size)
            return first + (within % size if within is not None and size else 0)
        first += size
    return None


def beyond_cluster(
    gang: Gang, pod: PodView, needed: int, totals: list[tuple[int, Mapping[str, str]]]
) -> str | None:
    """Why the group can never be placed: the cluster, empty, holds fewer members than it needs;
    None when it could. `totals`: members each usable node takes with nothing else on it."""
    most = sum(count for count, _ in totals)
    if most >= needed:
        return None
    return (
        f"gang {gang}: its {gang.source} needs minCount {gang.size}{_summed(gang)} x "
        f"({pod.gpus} GPU, "
        f"{pod.rails} rails), {needed} still to place, but the whole cluster holds {most} even "
        "with nothing else running; it can never be placed"
    )


def _summed(gang: Gang) -> str:
    children = gang.native.children if gang.native is not None else ()
    return f" ({' + '.join(str(g.min_count) for g in children)})" if children else ""


def native_summary(gang: Gang) -> Json | None:
    """What explain shows of the gang's scheduling.k8s.io group; None for other gangs."""
    group = gang.native
    if group is None:
        named = gang.refusal and "scheduling.k8s.io" in gang.source
        return {"waiting": gang.refusal} if named else None
    body: Json = {
        "group": str(group),
        "minCount": group.min_count,
        "mode": HELD if gang.held else BARRIER,
        "disruptionMode": group.disruption,
    }
    if group.preemption_policy:
        body["preemptionPolicy"] = group.preemption_policy
    if group.priority is not None:
        body["priority"] = group.priority
    if group.topology:
        body["topology"] = list(group.topology)
    if group.parent:
        body["compositePodGroup"] = group.parent
    if group.children:
        body["minGroupCount"] = group.min_group_count
        body["podGroups"] = {g.name: g.min_count for g in group.children}
        body["slices"] = slice_level(group) or "none (no PodGroup has a topology)"
    if gang.refusal:
        body["refused"] = gang.refusal
    return body


def native_line(body: Json) -> str:
    """explain's text line for `native_summary`."""
    if "group" not in body:
        return str(body.get("waiting"))
    said = f"{body['group']}: {body['mode']}; disruption {body['disruptionMode']}"
    if policy := body.get("preemptionPolicy"):
        said += f", preemptionPolicy {policy}"
    if groups := body.get("podGroups"):
        each = ", ".join(f"{name} ({count})" for name, count in groups.items())
        said += f"; {len(groups)} PodGroups as slices in {body['slices']}: {each}"
    return said
