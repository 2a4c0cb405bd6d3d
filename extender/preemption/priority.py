"""Pod priority as kube-scheduler reads it, and the units preemption takes.

A pod's priority is `spec.priority`, which the Priority admission plugin fills from the pod's
PriorityClass (or the global default, else 0); a gang's is its members' highest. A pod with
`preemptionPolicy: Never` never preempts (kube-scheduler's PodEligibleToPreemptOthers); a gang
preempts only when none of its members says Never.

Preemption by kube-rdma takes whole units: a gang is one unit (all its bound members, wherever
they run), never a part of one; a pod of no gang is a unit of its own. An elastic gang, bound
with more members than its minimum, gives up its extra members one by one.

A Kubernetes scheduling.k8s.io group (extender/gangs/identity.py `Gang.native`) says itself, as
kube-scheduler 1.37's workload-aware preemption reads it: `disruptionMode: All` (v1alpha2:
`PodGroup`) is one unit, `Single` (v1alpha2: `Pod`, the default) lets its pods go one by one;
its `priority`, where set, is the gang's; its `preemptionPolicy: Never` keeps the gang from
preempting (and holding), as the pods' own field does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from extender.cluster.pods import PodKey
from extender.gangs.identity import Gang, Singleton
from kube_rdma.core.frameworks.kubernetes_scheduling import ALL, NEVER, SINGLE
from kube_rdma.core.objects import Json


def pod_priority(pod: Json) -> int:
    value = (pod.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def may_preempt(pod: Json) -> bool:
    return (pod.get("spec") or {}).get("preemptionPolicy") != "Never"


def group_never_preempts(gang: Gang | Singleton) -> str | None:
    """Why the gang's scheduling.k8s.io group keeps it from preempting; None when it does not."""
    group = gang.native if isinstance(gang, Gang) else None
    if group is None or group.preemption_policy != NEVER:
        return None
    return f"its {group} says preemptionPolicy: Never: it neither preempts nor holds nodes"


def group_priority(gang: Gang | Singleton) -> int | None:
    """The priority the gang's group sets, which wins over its pods'; None when unset."""
    group = gang.native if isinstance(gang, Gang) else None
    return None if group is None else group.priority


def waiting_priority(gang: Gang, pod: Json, so_far: int) -> int:
    """A waiting gang's priority once `pod` of it is seen: its group's, else its pods' highest."""
    set_by_group = group_priority(gang)
    return max(so_far, pod_priority(pod)) if set_by_group is None else set_by_group


def disrupted_one_by_one(gang: Gang | Singleton) -> bool:
    """Its group's disruptionMode is Single: its pods may be evicted one at a time."""
    group = gang.native if isinstance(gang, Gang) else None
    return group is not None and group.disruption == SINGLE


def disrupted_whole(gang: Gang | Singleton) -> bool:
    """Its group's disruptionMode is All: no part of it is ever evicted alone."""
    group = gang.native if isinstance(gang, Gang) else None
    return group is not None and group.disruption == ALL


def started(pod: Json) -> str:
    """When the pod started running (RFC 3339, sortable), else when it was created."""
    status, meta = pod.get("status") or {}, pod.get("metadata") or {}
    return str(status.get("startTime") or meta.get("creationTimestamp") or "")


def ends_by(pod: Json) -> str | None:
    """When the pod ends at the latest (RFC 3339, sortable): its start plus its
    `activeDeadlineSeconds`, past which the kubelet fails it (DeadlineExceeded). None without
    a deadline, or before it started."""
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    start = (pod.get("status") or {}).get("startTime")
    if not isinstance(deadline, int) or isinstance(deadline, bool) or not start:
        return None
    try:
        begun = datetime.fromisoformat(str(start).replace("Z", "+00:00"))
    except ValueError:
        return None
    end = begun.astimezone(UTC) + timedelta(seconds=deadline)
    return end.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class SharedClaim:
    """A resource claim a unit's pods share with pods outside it: its devices are freed only
    once every one of `users` is evicted, whichever units they belong to."""

    name: str
    """`<namespace>/<name>`."""
    node: str
    amounts: Mapping[str, int]
    """What its devices count as, in the resources device-plugin pods request."""
    users: frozenset[str]
    """The UIDs of the pods whose going frees it."""


@dataclass(frozen=True)
class Unit:
    """Pods that are evicted together, or not at all."""

    name: str
    """How events and explain name it: `gang ns/name` or `pod ns/name`."""
    priority: int
    pods: tuple[PodKey, ...]
    nodes: Mapping[str, Mapping[str, int]]
    """node -> the resources the unit's pods there hold."""
    gpus: int
    started: str
    """The latest start among its pods (RFC 3339)."""
    gang: bool
    ends_by: str | None = None
    """When its last pod ends at the latest (RFC 3339), when every pod has a deadline."""
    uids: frozenset[str] = frozenset()
    shared: tuple[SharedClaim, ...] = ()
    """Claims freed only with pods of other units as well."""


def unit_ends_by(pods: Sequence[Json]) -> str | None:
    ends = [ends_by(pod) for pod in pods]
    return max(e for e in ends if e is not None) if ends and None not in ends else None


def least_damage_first(units: Sequence[Unit]) -> list[Unit]:
    """Lowest priority first, then fewest GPUs, then the shortest time running (the latest
    start); pods of no gang before gangs where all else is equal."""
    latest_first = sorted(units, key=lambda u: (u.started, u.name), reverse=True)
    return sorted(latest_first, key=lambda u: (u.priority, u.gpus, u.gang))


def gang_priority(members: Sequence[Json]) -> int:
    return max((pod_priority(p) for p in members), default=0)


def may_cross(
    namespace: str,
    classes: Iterable[str],
    allowed_classes: Iterable[str],
    namespaces: Iterable[str],
) -> bool:
    """Whether a gang of `namespace`, whose members have PriorityClasses `classes`, may take
    victims in other namespaces: always, as kube-scheduler lets any pod preempt lower-priority
    pods anywhere, unless the admin listed who may (PriorityClasses, namespaces): then only
    those."""
    allowed_classes, namespaces = set(allowed_classes), set(namespaces)
    if not allowed_classes and not namespaces:
        return True
    return namespace in namespaces or bool(allowed_classes & set(classes))
