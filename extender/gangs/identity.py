"""Which gang a pod belongs to, and how many members the gang needs.

kube-rdma's own keys come first; then the keys the ecosystem's controllers put on their pods:
scheduler-plugins' coscheduling and Volcano PodGroups, Kueue pod groups, Koordinator gangs,
Kubeflow training jobs and JobSets. The same concept is a label in one project and an
annotation in another, so every key is looked up in both maps. Where the size lives in a
PodGroup object, the cluster model supplies the PodGroups it holds. After these explicit keys,
the workload that owns the pod (a PyTorchJob, MPIJob, JobSet, ...) gives the gang: `owner_gang`
(extender/gangs/ownership.py) reads it. A pod that names a gang whose size cannot be found is
scheduled alone, and `reason` says why (explain shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kube_rdma.core import keys
from kube_rdma.core.objects import Json

COSCHEDULING = "scheduling.x-k8s.io/pod-group"
VOLCANO = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
KUEUE_NAME, KUEUE_COUNT = "kueue.x-k8s.io/pod-group-name", "kueue.x-k8s.io/pod-group-total-count"
KOORD = "gang.scheduling.koordinator.sh/"
KUBEFLOW_JOB = "training.kubeflow.org/job-name"
JOBSET = "jobset.sigs.k8s.io/jobset-name"
JOB_LABELS = ((KUBEFLOW_JOB, "Kubeflow job"), (JOBSET, "JobSet"))

# PodGroup API groups whose objects carry spec.minMember.
PODGROUP_GROUPS = {"coscheduling": "scheduling.x-k8s.io", "volcano": "scheduling.volcano.sh"}
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
    """Which key named it, e.g. `kube-rdma.io/gang` or `PodGroup scheduling.x-k8s.io`."""

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
    for key, group in [(COSCHEDULING, PODGROUP_GROUPS["coscheduling"])] + [
        (k, PODGROUP_GROUPS["volcano"]) for k in VOLCANO
    ]:
        name = both.get(key)
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
    name = both.get(KUEUE_NAME)
    if not name:
        return None
    return _named(
        namespace,
        name,
        _size(both.get(KUEUE_COUNT)),
        "Kueue pod group",
        f"{KUEUE_COUNT} is missing",
    )


def _koordinator(
    namespace: str, both: Mapping[str, str], sizes: PodGroupSize
) -> Gang | Singleton | None:
    name = both.get(KOORD + "name")
    if not name:
        return None
    size = _size(both.get(KOORD + "min-available")) or _size(both.get(KOORD + "total-number"))
    return _named(namespace, name, size, "Koordinator gang", f"{KOORD}min-available is missing")


def _sized_job(
    namespace: str, both: Mapping[str, str], sizes: PodGroupSize
) -> Gang | Singleton | None:
    """A Kubeflow job or a JobSet named by its pods' label, sized by kube-rdma.io/gang-size."""
    for key, source in JOB_LABELS:
        name, size = both.get(key), _size(both.get(keys.GANG_SIZE))
        if name and size is not None:
            return _named(namespace, name, size, source, "")
    return None


def _unsized_job(namespace: str, both: Mapping[str, str]) -> Singleton | None:
    """A job's pod that no PodGroup, size annotation or known owner gives a size."""
    for key, source in JOB_LABELS:
        if name := both.get(key):
            missing = f"neither a PodGroup label, {keys.GANG_SIZE} nor a known owner gives its size"
            return Singleton(f"gang {namespace}/{name} ({source}): {missing}; scheduled alone")
    return None
