"""Which gang a pod belongs to, and how many members the gang needs.

kube-rdma's own keys come first; then the keys the ecosystem's controllers put on their pods:
scheduler-plugins' coscheduling and Volcano PodGroups, Kueue pod groups, Koordinator gangs,
Kubeflow training jobs and JobSets. The same concept is a label in one project and an
annotation in another, so every key is looked up in both maps. Where the size lives in a
PodGroup object, the cluster model supplies the PodGroups it holds. A pod that names a gang
whose size cannot be found is scheduled alone, and `reason` says why (explain shows it).
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

# PodGroup API groups whose objects carry spec.minMember.
PODGROUP_GROUPS = {"coscheduling": "scheduling.x-k8s.io", "volcano": "scheduling.volcano.sh"}
PodGroupSize = Callable[[str, str, str], int | None]
"""(API group, namespace, name) -> the PodGroup's minMember, None when unknown."""


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


def gang_of(pod: Json, podgroup_size: PodGroupSize) -> Gang | Singleton:
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    both: Mapping[str, str] = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    for find in (_ours, _podgroup, _kueue, _koordinator, _kubeflow, _jobset):
        found = find(namespace, both, podgroup_size)
        if found is not None:
            return found
    return Singleton()


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


def _kubeflow(
    namespace: str, both: Mapping[str, str], sizes: PodGroupSize
) -> Gang | Singleton | None:
    return _sized_by_annotation(namespace, both.get(KUBEFLOW_JOB), both, "Kubeflow job")


def _jobset(
    namespace: str, both: Mapping[str, str], sizes: PodGroupSize
) -> Gang | Singleton | None:
    return _sized_by_annotation(namespace, both.get(JOBSET), both, "JobSet")


def _sized_by_annotation(
    namespace: str, name: str | None, both: Mapping[str, str], source: str
) -> Gang | Singleton | None:
    """Controllers whose pods name their job but not its size: a PodGroup (found above) or
    kube-rdma.io/gang-size has to say it."""
    if not name:
        return None
    missing = f"neither a PodGroup label nor {keys.GANG_SIZE} gives its size"
    return _named(namespace, name, _size(both.get(keys.GANG_SIZE)), source, missing)
