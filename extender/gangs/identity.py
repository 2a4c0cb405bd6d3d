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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kube_rdma.core import keys
from kube_rdma.core.frameworks import coscheduling, jobset, koordinator, kubeflow, kueue, volcano
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
    pod: Json, podgroup_size: PodGroupSize, owner_gang: OwnerGang = lambda pod: None
) -> Gang | Singleton:
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    both: Mapping[str, str] = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
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
