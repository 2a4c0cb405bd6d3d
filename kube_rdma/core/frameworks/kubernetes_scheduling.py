"""Kubernetes' own gangs (`scheduling.k8s.io`, kubernetes/api scheduling/ and core/v1 types.go):
a pod names the group it is scheduled with in its spec, and the group's object says how many
members it needs, its priority, how it may be disrupted and the topology it must be placed in.

What each version puts where (read off the published types at release-1.35, release-1.36 and
master):
- 1.35, `v1alpha1`: the pod's `spec.workloadRef` {name, podGroup, podGroupReplicaKey} names a
  Workload and one of its `spec.podGroups[]` {name, policy {basic | gang {minCount}}}; one group
  instance per replica key. No disruption mode, priority or topology there.
- 1.36, `v1alpha2`: the pod's `spec.schedulingGroup.podGroupName` names a runtime PodGroup
  (workloadRef is tombstoned): spec {podGroupTemplateRef {workload {workloadName,
  podGroupTemplateName}}, schedulingPolicy {basic | gang {minCount}}, schedulingConstraints
  {topology [{key}]} (at most one), resourceClaims[], disruptionMode `Pod` | `PodGroup` (default
  Pod), priorityClassName, priority}; status {conditions (`PodGroupScheduled`),
  resourceClaimStatuses[] {name, resourceClaimName}}.
- 1.37 (master), `v1alpha3` and `v1beta1`: spec {parentCompositePodGroupName, workloadRef
  {workloadName, templateName}, schedulingPolicy, schedulingConstraints, resourceClaims,
  disruptionMode {single: {}} | {all: {}}, priority, preemptionPolicy (`PreemptLowerPriority` |
  `Never`)}, plus priorityClassName in v1alpha3 only; the condition is
  `PodGroupInitiallyScheduled`.
  A CompositePodGroup (v1alpha3 only: v1beta1 has the Workload's compositePodGroupTemplates
  but not the object) groups PodGroups and other CompositePodGroups that name it in their
  `parentCompositePodGroupName`: spec {parentCompositePodGroupName, workloadRef,
  schedulingPolicy {basic | gang {minGroupCount}}, schedulingConstraints {topology [{key}]},
  disruptionMode, priorityClassName, priority, preemptionPolicy}; the condition is
  `CompositePodGroupInitiallyScheduled`. A hierarchy is at most `WorkloadMaxTreeDepth` (4)
  levels deep, its root the first.
Disruption is read as `Single` (pods one by one) or `All` (the whole group together) whatever
the version's spelling. Another version is not read: `read_podgroup` answers None for it.

`gang_group` resolves a pod's PodGroup to the group its pods are a gang of: the PodGroup, or
the CompositePodGroup above it whose gang policy (and every one between) binds its children
together, with its PodGroups as `children`, as kube-scheduler's workload forest walks the
hierarchy up to its root (pkg/scheduler, workloadForest.validateHierarchy at master): a
missing ancestor waits, a cycle or a branch deeper than `MAX_TREE_DEPTH` is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GROUP = "scheduling.k8s.io"
WORKLOAD_VERSIONS = ("v1alpha1",)
"""Versions whose Workloads hold the groups (`spec.podGroups`), named by `spec.workloadRef`."""
PODGROUP_VERSIONS = ("v1beta1", "v1alpha3", "v1alpha2")
"""Versions with runtime PodGroups, named by `spec.schedulingGroup.podGroupName`."""
COMPOSITE_VERSIONS = ("v1alpha3",)
"""Versions that serve CompositePodGroups (scheduling/v1alpha3/register.go; not v1beta1's)."""
KNOWN_VERSIONS = frozenset({*WORKLOAD_VERSIONS, *PODGROUP_VERSIONS, *COMPOSITE_VERSIONS})
SCHEDULED_CONDITIONS = (
    "PodGroupScheduled",
    "PodGroupInitiallyScheduled",
    "CompositePodGroupInitiallyScheduled",
)
"""The condition kube-scheduler sets once the group's quorum is placed (1.36; 1.37)."""
MAX_TREE_DEPTH = 4
"""WorkloadMaxTreeDepth (scheduling/v1alpha3 types.go): levels of a hierarchy of
CompositePodGroups and PodGroups, its root the first."""

SINGLE = "Single"
ALL = "All"
NEVER = "Never"
WORKLOAD = "Workload"
PODGROUP = "PodGroup"
COMPOSITE = "CompositePodGroup"


@dataclass(frozen=True)
class GroupRef:
    """The group a pod names in its spec."""

    kind: str
    """`Workload` (1.35 workloadRef) or `PodGroup` (1.36+ schedulingGroup)."""
    name: str
    """The Workload's or the PodGroup's name."""
    pod_group: str = ""
    """1.35: the Workload's podGroups[].name."""
    replica_key: str = ""
    """1.35: the group instance among the replicas of one podGroup."""

    @property
    def gang_name(self) -> str:
        """The gang's name: the PodGroup, or workload/podGroup[/replica key]."""
        if self.kind == PODGROUP:
            return self.name
        parts = [self.name, self.pod_group] + ([self.replica_key] if self.replica_key else [])
        return "/".join(parts)

    def __str__(self) -> str:
        if self.kind == PODGROUP:
            return f"PodGroup {self.name}"
        return f"Workload {self.name} podGroup {self.pod_group or '?'}"


@dataclass(frozen=True)
class GroupClaim:
    """One of a PodGroup's `spec.resourceClaims`, with the ResourceClaim it is (its
    `resourceClaimName`, else the one generated from its template, from
    `status.resourceClaimStatuses`; "" while not generated). A pod's claim entry equal to it in
    every field is this claim, reserved for the PodGroup rather than for each pod (core/v1
    PodResourceClaim)."""

    name: str
    claim_name: str = ""
    template_name: str = ""
    resolved: str = ""

    def matches(self, entry: Mapping[str, Any]) -> bool:
        return (
            str(entry.get("name") or "") == self.name
            and str(entry.get("resourceClaimName") or "") == self.claim_name
            and str(entry.get("resourceClaimTemplateName") or "") == self.template_name
        )


@dataclass(frozen=True)
class NativeGroup:
    """One group as kube-scheduler reads it."""

    kind: str
    namespace: str
    name: str
    """The PodGroup's name, or the Workload's."""
    version: str
    min_count: int | None
    """`schedulingPolicy.gang.minCount`; None for the basic policy (no gang). A
    CompositePodGroup planned as one gang: its PodGroups' minCounts summed."""
    topology: tuple[str, ...] = ()
    """`schedulingConstraints.topology[].key`: node labels the group must share."""
    disruption: str = SINGLE
    priority: int | None = None
    priority_class: str = ""
    preemption_policy: str = ""
    claims: tuple[GroupClaim, ...] = ()
    """The ResourceClaims the group owns: one claim for all its pods."""
    parent: str = ""
    """The CompositePodGroup it belongs to (1.37)."""
    scheduled: bool = False
    """kube-scheduler's condition says the group was placed."""
    min_group_count: int | None = None
    """A CompositePodGroup's `schedulingPolicy.gang.minGroupCount`; None for basic."""
    children: tuple[NativeGroup, ...] = ()
    """A CompositePodGroup planned as one gang: the PodGroups under it, each a slice, in order."""
    problem: str = ""
    """Why its hierarchy cannot be placed: a CompositePodGroup above it missing (`waits`), or
    one that kube-scheduler refuses too (a cycle, too deep)."""
    waits: bool = False

    @property
    def api_version(self) -> str:
        return f"{GROUP}/{self.version}"

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} ({self.api_version})"


def group_ref(spec: Mapping[str, Any]) -> GroupRef | None:
    """The group a pod's spec names, if any."""
    group = spec.get("schedulingGroup") or {}
    if isinstance(group, Mapping) and (name := group.get("podGroupName")):
        return GroupRef(PODGROUP, str(name))
    ref = spec.get("workloadRef") or {}
    if isinstance(ref, Mapping) and (name := ref.get("name")):
        pod_group, replica = ref.get("podGroup"), ref.get("podGroupReplicaKey")
        return GroupRef(WORKLOAD, str(name), str(pod_group or ""), str(replica or ""))
    return None


def version_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(API group, version) of an object."""
    group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
    return group, version


def read_podgroup(obj: Mapping[str, Any]) -> NativeGroup | None:
    """A runtime PodGroup of a known version; None for another version."""
    group, version = version_of(obj)
    if group != GROUP or version not in PODGROUP_VERSIONS:
        return None
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    status = obj.get("status") or {}
    made = {
        c.get("name"): c.get("resourceClaimName") for c in status.get("resourceClaimStatuses") or []
    }
    claims = tuple(
        GroupClaim(
            str(c.get("name")),
            str(c.get("resourceClaimName") or ""),
            str(c.get("resourceClaimTemplateName") or ""),
            str(c.get("resourceClaimName") or made.get(c.get("name")) or ""),
        )
        for c in spec.get("resourceClaims") or []
        if c.get("name")
    )
    policy = spec.get("preemptionPolicy")
    return NativeGroup(
        PODGROUP,
        str(meta.get("namespace") or "default"),
        str(meta.get("name") or ""),
        version,
        _min_count(spec.get("schedulingPolicy")),
        _topology(spec.get("schedulingConstraints")),
        _disruption(spec.get("disruptionMode")),
        _int(spec.get("priority")),
        str(spec.get("priorityClassName") or ""),
        str(policy or ""),
        claims,
        str(spec.get("parentCompositePodGroupName") or ""),
        _scheduled(status),
    )


def read_composite(obj: Mapping[str, Any]) -> NativeGroup | None:
    """A CompositePodGroup of a known version; None for another version."""
    group, version = version_of(obj)
    if group != GROUP or version not in COMPOSITE_VERSIONS:
        return None
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    policy = spec.get("schedulingPolicy")
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    return NativeGroup(
        COMPOSITE,
        str(meta.get("namespace") or "default"),
        str(meta.get("name") or ""),
        version,
        None,
        _topology(spec.get("schedulingConstraints")),
        _disruption(spec.get("disruptionMode")),
        _int(spec.get("priority")),
        str(spec.get("priorityClassName") or ""),
        str(spec.get("preemptionPolicy") or ""),
        parent=str(spec.get("parentCompositePodGroupName") or ""),
        scheduled=_scheduled(obj.get("status") or {}),
        min_group_count=(_int(gang.get("minGroupCount")) or 1)
        if isinstance(gang, Mapping)
        else None,
    )


def read_workload(obj: Mapping[str, Any]) -> dict[str, NativeGroup] | None:
    """A 1.35 Workload's groups by podGroups[].name; None for another version."""
    group, version = version_of(obj)
    if group != GROUP or version not in WORKLOAD_VERSIONS:
        return None
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
    return {
        str(entry.get("name")): NativeGroup(
            WORKLOAD, namespace, name, version, _min_count(entry.get("policy"))
        )
        for entry in spec.get("podGroups") or []
        if entry.get("name")
    }


def _scheduled(status: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in SCHEDULED_CONDITIONS and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _min_count(policy: Any) -> int | None:
    gang = (policy or {}).get("gang") if isinstance(policy, Mapping) else None
    return _int(gang.get("minCount")) if isinstance(gang, Mapping) else None


def _topology(constraints: Any) -> tuple[str, ...]:
    if not isinstance(constraints, Mapping):
        return ()
    return tuple(str(t["key"]) for t in constraints.get("topology") or [] if t.get("key"))


def _disruption(mode: Any) -> str:
    """`All` or `Single`: v1alpha2 spells them `PodGroup` and `Pod`, later versions as a union."""
    if mode == "PodGroup" or (isinstance(mode, Mapping) and mode.get("all") is not None):
        return ALL
    return SINGLE


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
