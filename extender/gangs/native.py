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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from extender.gangs.identity import Gang
from extender.levels.placement import Placement
from extender.podview import PodView
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
    if group is None or not group.topology:
        return asked
    key = group.topology[0]
    if asked.source == "none":
        return Placement(required=key, source=f"{group.kind} {group.api_version}")
    if asked.required is not None and asked.required != key:
        problem = (
            f"{asked.source} requires topology {asked.required!r}, but its {group} requires "
            f"{key!r} (schedulingConstraints.topology); make them agree"
        )
        return replace(asked, problem=problem)
    return asked


def beyond_cluster(
    gang: Gang, pod: PodView, needed: int, totals: list[tuple[int, Mapping[str, str]]]
) -> str | None:
    """Why the group can never be placed: the cluster, empty, holds fewer members than it needs;
    None when it could. `totals`: members each usable node takes with nothing else on it."""
    most = sum(count for count, _ in totals)
    if most >= needed:
        return None
    return (
        f"gang {gang}: its {gang.source} needs minCount {gang.size} x ({pod.gpus} GPU, "
        f"{pod.rails} rails), {needed} still to place, but the whole cluster holds {most} even "
        "with nothing else running; it can never be placed"
    )


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
    return said
