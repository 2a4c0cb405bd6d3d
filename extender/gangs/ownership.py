"""A pod's gang read off the workload that owns it, following ownerReferences.

A training controller's pods carry no gang size; their owner does. The pod's controller
ownerReference leads to a PyTorchJob, an MPIJob or a Volcano Job directly, and through a batch
Job to a JobSet (Trainer's TrainJob owns that JobSet) or to an MPIJob's launcher. Each step is
checked against the uid the reference names, so a newer object of the same name is never taken
for the owner. A pod whose owner is unknown (its CRD absent, or not in the cache) is scheduled
alone, with the reason explain shows; a pod with no workload owner is left to the other rules.
"""

from __future__ import annotations

from typing import Protocol

from extender.cluster.owners import (
    BATCH_JOBS,
    JOBSETS,
    MPI_JOBS,
    MPI_JOBS_V1,
    WorkloadResource,
    resource_of,
)
from extender.gangs import workloads
from extender.gangs.identity import Gang, Singleton
from extender.gangs.workloads import Needs, Workload
from kube_rdma.core.frameworks import jobset, volcano
from kube_rdma.core.objects import Json

RULES = {
    "PyTorchJob": workloads.pytorch_job,
    "MPIJob": workloads.mpi_job,
    "JobSet": workloads.jobset,
    "Volcano Job": workloads.volcano_job,
}


class OwnerStore(Protocol):
    def find(self, resource: WorkloadResource, namespace: str, name: str) -> Json | None: ...

    def listed(self, resource: WorkloadResource) -> bool: ...


Owned = tuple[WorkloadResource, Json]


def owner_gang(pod: Json, owners: OwnerStore, needs: Needs) -> Gang | Singleton | None:
    """The pod's gang from its owner; None when no workload owns it."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    owner = _owner(pod, namespace, owners)
    if not isinstance(owner, tuple):
        return owner
    resource, obj = owner
    if resource == BATCH_JOBS:
        return _through_job(pod, namespace, obj, owners, needs)
    return _gang(pod, namespace, RULES[_kind(resource)](obj, needs))


def _through_job(
    pod: Json, namespace: str, job: Json, owners: OwnerStore, needs: Needs
) -> Gang | Singleton | None:
    parent = _owner(job, namespace, owners)
    if isinstance(parent, Singleton):
        return parent
    if parent is None:
        return _gang(pod, namespace, workloads.indexed_job(job, needs))
    resource, obj = parent
    if resource in (MPI_JOBS, MPI_JOBS_V1):
        return Singleton(f"the launcher of MPIJob {_name(obj)}, whose gang is its Workers")
    if resource == JOBSETS:
        return _gang(pod, namespace, workloads.jobset(obj, needs), _train_job(obj))
    return _gang(pod, namespace, workloads.indexed_job(job, needs))


def _gang(pod: Json, namespace: str, workload: Workload | None, via: str = "") -> Gang | Singleton:
    if workload is None:
        return Singleton()
    source = f"{via}{workload}"
    if not workload.counts(pod):
        return Singleton(f"not counted in gang {namespace}/{workload.name} ({source})")
    if workload.size == 1:
        return Singleton()
    return Gang(namespace, workload.name, workload.size, source)


def _owner(obj: Json, namespace: str, owners: OwnerStore) -> Owned | Singleton | None:
    """The object's controller, when it is a workload: the object, or why it is unknown."""
    ref = _controller(obj)
    resource = resource_of(str(ref.get("apiVersion")), str(ref.get("kind"))) if ref else None
    if ref is None or resource is None:
        return None
    named = f"{ref.get('kind')} {ref.get('name')}"
    if not owners.listed(resource):
        return Singleton(
            f"its owner {named} is unknown: {resource} is not listed (is its CRD installed?); "
            "scheduled alone"
        )
    found = owners.find(resource, namespace, str(ref.get("name")))
    uid = (found or {}).get("metadata", {}).get("uid")
    if found is None or (ref.get("uid") and uid != ref.get("uid")):
        return Singleton(
            f"its owner {named} (uid {ref.get('uid')}) is not in the extender's cache; "
            "scheduled alone"
        )
    return resource, found


def _controller(obj: Json) -> Json | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if isinstance(r, dict) and r.get("controller")), None)


def _train_job(obj: Json) -> str:
    """`TrainJob NAME, ` when a Trainer TrainJob owns the JobSet."""
    ref = _controller(obj)
    if ref is None or ref.get("kind") != jobset.TRAIN_JOB:
        return ""
    return f"{jobset.TRAIN_JOB} {ref.get('name')}, "


def _kind(resource: WorkloadResource) -> str:
    return "Volcano Job" if resource.group == volcano.BATCH_GROUP else resource.kind


def _name(obj: Json) -> str:
    return str((obj.get("metadata") or {}).get("name"))
