"""Which gang a pod belongs to, and how many members the gang needs.

kube-rdma's own keys come first; then the keys the ecosystem's controllers put on their pods:
scheduler-plugins' coscheduling and Volcano PodGroups, Kueue pod groups, Koordinator gangs,
Kubeflow training jobs and JobSets (each framework's keys and readers in
kube_rdma/core/frameworks/). The same concept is a label in one project and an
annotation in another, so every key is looked up in both maps. Where the size lives in a
PodGroup object, the cluster model supplies the PodGroups it holds. After these explicit keys,
the workload that owns the pod (a PyTorchJob, MPIJob, JobSet, ...) gives the gang: `owner_gang`
(extender/gangs/ownership.py) reads it. A pod that names a gang whose size cannot be found is
scheduled alone, and `reason` says why (explain shows it).

Before all of them comes Kubernetes' own gang (`scheduling.k8s.io`, 1.35+): a pod whose spec
names a Workload's pod group (`spec.workloadRef`) or a PodGroup (`spec.schedulingGroup`) is a
member of that group, sized by its `minCount`, without any kube-rdma key
(kube_rdma/core/frameworks/kubernetes_scheduling.py). kube-rdma's own keys that disagree with
the group (another gang name or size) refuse the pod, naming both; a group that does not exist
yet makes the pod wait, as kube-scheduler's GangScheduling plugin does. A PodGroup under a
CompositePodGroup with the gang policy is one slice of the composite's gang
(kube_rdma/core/frameworks/composite_pod_groups.py): the gang is named after the composite and
sized by its PodGroups together, and kube-rdma's slice keys on the pod must agree with them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kube_rdma.core import keys
from kube_rdma.core.frameworks import coscheduling, jobset, koordinator, kubeflow, kueue, volcano
from kube_rdma.core.frameworks.kubernetes_scheduling import (
    COMPOSITE,
    GroupRef,
    NativeGroup,
    group_ref,
)
from kube_rdma.core.objects import Json

NameOf = Callable[[Mapping[str, str]], str | None]
"""A framework's reader of the gang (job, PodGroup) a pod names, from its labels and
annotations together."""
JOBS: tuple[tuple[NameOf, str], ...] = (
    (kubeflow.job_name, "Kubeflow job"),
    (jobset.jobset_name, "JobSet"),
)
"""The training jobs a pod's label names, and how explain calls them."""

# PodGroup API groups whose objects carry spec.minMember, and the pod's name for its PodGroup.
PODGROUPS: tuple[tuple[NameOf, str], ...] = (
    (coscheduling.group_name, coscheduling.GROUP),
    (volcano.group_name, volcano.SCHEDULING_GROUP),
)
PodGroupSize = Callable[[str, str, str], int | None]
"""(API group, namespace, name) -> the PodGroup's minMember, None when unknown."""
OwnerGang = Callable[[Json], "Gang | Singleton | None"]
"""The pod's gang from the workload owning it; None when no workload owns it."""
NativeLookup = Callable[[str, GroupRef], NativeGroup | None]
"""(namespace, the group a pod names) -> the scheduling.k8s.io group; None while absent."""


@dataclass(frozen=True)
class Gang:
    namespace: str
    name: str
    size: int
    source: str
    """Which key named it, e.g. `kube-rdma.io/gang`, or `PodGroup` and the PodGroup's API group."""
    vouched: bool = field(default=False, compare=False)
    """Read off its owning workload, whose controller creates every member: the gang may act
    before all its members exist (extender/gangs/quorum.py)."""
    native: NativeGroup | None = field(default=None, compare=False)
    """The scheduling.k8s.io group it is (its priority, disruption mode, topology)."""
    held: bool = field(default=False, compare=False)
    """kube-scheduler's own GangScheduling holds its members (at Permit, or in its PodGroup
    cycle) and lets them bind together (--native-gang-scheduling): no barrier of the extender's."""
    refusal: str = field(default="", compare=False)
    """Why it may not be planned at all: its group does not exist yet, or kube-rdma's keys
    contradict it."""

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Singleton:
    """A pod scheduled alone; `reason` is set when it names a gang whose size is unknown."""

    reason: str = ""


def gang_of(
    pod: Json,
    podgroup_size: PodGroupSize,
    owner_gang: OwnerGang = lambda pod: None,
    native: NativeLookup | None = None,
    held: bool = False,
) -> Gang | Singleton:
    """`native`: the scheduling.k8s.io groups, None where they are not followed; `held`:
    kube-scheduler holds their gangs itself (--native-gang-scheduling)."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    both: Mapping[str, str] = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    ref = group_ref(pod.get("spec") or {}) if native is not None else None
    if native is not None and ref is not None:
        found = _native(namespace, both, ref, native(namespace, ref), held)
        if found is not None:
            return found
    for find in (_ours, _podgroup, _kueue, _koordinator, _sized_job):
        found = find(namespace, both, podgroup_size)
        if found is not None:
            return found
    owned = owner_gang(pod)
    if owned is not None:
        return owned
    return _unsized_job(namespace, both) or Singleton()


def _size(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() and int(value) > 0 else None


def _named(
    namespace: str, name: str, size: int | None, source: str, missing: str
) -> Gang | Singleton:
    if size is None:
        return Singleton(f"gang {namespace}/{name} ({source}): {missing}; scheduled alone")
    if size == 1:
        return Singleton()
    return Gang(namespace, name, size, source)


def _ours(namespace: str, both: Mapping[str, str], sizes: PodGroupSize) -> Gang | Singleton | None:
    name = both.get(keys.GANG)
    if not name:
        return None
    value = both.get(keys.GANG_SIZE)
    missing = (
        f"{keys.GANG_SIZE} is missing"
        if value is None
        else f"{keys.GANG_SIZE}={value!r} is not a positive number"
    )
    return _named(namespace, name, _size(value), keys.GANG, missing)


def _podgroup(
    namespace: str, both: Mapping[str, str], sizes: PodGroupSize
) -> Gang | Singleton | None:
    for name_of, group in PODGROUPS:
        name = name_of(both)
        if name:
            source = f"PodGroup {group}"
            return _named(
                namespace,
                name,
                sizes(group, namespace, name),
                source,
                f"no PodGroup {name} with spec.minMember",
            )
    return None


def _kueue(namespace: str, both: Mapping[str, str], sizes: PodGroupSize) -> Gang | Singleton | None:
    name = kueue.group_name(both)
    if not name:
        return None
    return _named(
        namespace,
        name,
        _size(both.get(kueue.POD_GROUP_TOTAL_COUNT)),
        "Kueue pod group",
        f"{kueue.POD_GROUP_TOTAL_COUNT} is missing",
    )


def _koordinator(
    namespace: str, both: Mapping[str, str], sizes: PodGroupSize
) -> Gang | Singleton | None:
    name = koordinator.gang_name(both)
    if not name:
        return None
    size = _size(both.get(koordinator.MIN_AVAILABLE)) or _size(both.get(koordinator.TOTAL_NUMBER))
    missing = f"{koordinator.MIN_AVAILABLE} is missing"
    return _named(namespace, name, size, "Koordinator gang", missing)


def _sized_job(
    namespace: str, both: Mapping[str, str], sizes: PodGroupSize
) -> Gang | Singleton | None:
    """A Kubeflow job or a JobSet named by its pods' label, sized by kube-rdma.io/gang-size."""
    for name_of, source in JOBS:
        name, size = name_of(both), _size(both.get(keys.GANG_SIZE))
        if name and size is not None:
            return _named(namespace, name, size, source, "")
    return None


def _unsized_job(namespace: str, both: Mapping[str, str]) -> Singleton | None:
    """A job's pod that no PodGroup, size annotation or known owner gives a size."""
    for name_of, source in JOBS:
        if name := name_of(both):
            missing = f"neither a PodGroup label, {keys.GANG_SIZE} nor a known owner gives its size"
            return Singleton(f"gang {namespace}/{name} ({source}): {missing}; scheduled alone")
    return None


def _native(
    namespace: str, both: Mapping[str, str], ref: GroupRef, group: NativeGroup | None, held: bool
) -> Gang | Singleton | None:
    """The pod's scheduling.k8s.io group; None for a group without the gang policy."""
    name = ref.gang_name
    source = f"{ref.kind} scheduling.k8s.io"
    if group is None or group.waits:
        why = group.problem if group else f"the pod names {ref}, which does not exist yet"
        if group is None:
            why += "; waiting for it, as kube-scheduler does"
        return Gang(namespace, name, 0, source, refusal=f"gang {namespace}/{name}: {why}")
    if group.min_count is None:
        return None
    source = f"{group.kind} {group.api_version}"
    if group.problem:
        why = f"gang {namespace}/{name}: {group.problem}"
        return Gang(namespace, name, group.min_count, source, native=group, refusal=why)
    if group.kind == COMPOSITE:
        name = group.name
    clash = _clashes(both, ref, group, name)
    if clash:
        why = f"gang {namespace}/{name}: " + "; ".join(clash) + "; remove or correct the annotation"
        return Gang(namespace, name, group.min_count, source, native=group, refusal=why)
    if group.min_count <= 1:
        return Singleton()
    return Gang(namespace, name, group.min_count, source, native=group, held=held)


def _clashes(both: Mapping[str, str], ref: GroupRef, group: NativeGroup, name: str) -> list[str]:
    """kube-rdma's keys on the pod that contradict its group, each naming both."""
    whose = f"{group.kind} {group.name}" if group.kind == COMPOSITE else str(ref)
    ours, size = both.get(keys.GANG), both.get(keys.GANG_SIZE)
    clash = []
    if ours and ours != name:
        clash.append(f"{keys.GANG}={ours!r} names another gang than {whose} ({name!r})")
    if size is not None and size != str(group.min_count):
        summed = " (its PodGroups' minCounts summed)" if group.children else ""
        clash.append(
            f"{keys.GANG_SIZE}={size!r} differs from {whose} minCount={group.min_count}{summed}"
        )
    if not group.children:
        return clash
    level = next((g.topology[0] for g in group.children if g.topology), None)
    asked = both.get(keys.TOPOLOGY_SLICE_REQUIRED)
    if asked is not None and asked != level:
        clash.append(
            f"{keys.TOPOLOGY_SLICE_REQUIRED}={asked!r} differs from the slices of {whose}: "
            f"its PodGroups, in {level or 'no level'!r} (schedulingConstraints.topology)"
        )
    own = next((g for g in group.children if g.name == ref.name), None)
    asked = both.get(keys.TOPOLOGY_SLICE_SIZE)
    if asked is not None and own is not None and asked != str(own.min_count):
        clash.append(
            f"{keys.TOPOLOGY_SLICE_SIZE}={asked!r} differs from the pod's slice of {whose}: "
            f"PodGroup {own.name} minCount={own.min_count}"
        )
    return clash
