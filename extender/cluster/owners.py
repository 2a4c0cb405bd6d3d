"""The workload objects that own training pods, kept so that a gang can be read off its owner.

A PyTorchJob, MPIJob, JobSet, Volcano Job or Indexed batch Job says how many pods its job needs
to start; its pods only say who owns them (ownerReferences). The extender keeps these objects as
they are, by resource, and knows which resources it has listed: a resource whose CRD is absent
never lists, so a pod it owns can be told apart from one whose owner is merely missing.
TrainJobs are not kept: a TrainJob's pods reach it through its JobSet, which holds the sizes,
and the JobSet's ownerReference names the TrainJob.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kube_rdma.core.frameworks import jobset, kubeflow, mpi, volcano
from kube_rdma.core.objects import Json


@dataclass(frozen=True)
class WorkloadResource:
    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def __str__(self) -> str:
        """kubectl's name for it, e.g. `jobs.batch`."""
        return f"{self.plural}.{self.group}"


BATCH_JOBS = WorkloadResource("batch", "v1", "jobs", "Job")
PYTORCH_JOBS = WorkloadResource(kubeflow.GROUP, kubeflow.VERSION, "pytorchjobs", "PyTorchJob")
MPI_JOBS = WorkloadResource(mpi.GROUP, mpi.VERSION, "mpijobs", "MPIJob")
MPI_JOBS_V1 = WorkloadResource(mpi.GROUP, mpi.TRAINING_OPERATOR_VERSION, "mpijobs", "MPIJob")
"""The training operator's MPIJob, where a cluster still serves it."""
JOBSETS = WorkloadResource(jobset.GROUP, jobset.VERSION, "jobsets", "JobSet")
VOLCANO_JOBS = WorkloadResource(volcano.BATCH_GROUP, volcano.BATCH_VERSION, "jobs", "Job")
WORKLOADS = (BATCH_JOBS, PYTORCH_JOBS, MPI_JOBS, MPI_JOBS_V1, JOBSETS, VOLCANO_JOBS)


def resource_of(api_version: str, kind: str) -> WorkloadResource | None:
    """The workload resource of an object or an ownerReference; None for other kinds."""
    for resource in WORKLOADS:
        if resource.api_version == api_version and resource.kind == kind:
            return resource
    return None


class Owners:
    """Workload objects by resource, namespace and name. Not thread-safe; one loop owns it."""

    def __init__(self) -> None:
        self._objects: dict[tuple[WorkloadResource, str, str], Json] = {}
        self._listed: set[WorkloadResource] = set()

    def replace(self, resource: WorkloadResource, items: Iterable[Json]) -> None:
        for key in [k for k in self._objects if k[0] == resource]:
            del self._objects[key]
        for obj in items:
            self.upsert(resource, obj)
        self._listed.add(resource)

    def upsert(self, resource: WorkloadResource, obj: Json) -> None:
        self._objects[_key(resource, obj)] = obj

    def delete(self, resource: WorkloadResource, obj: Json) -> None:
        self._objects.pop(_key(resource, obj), None)

    def find(self, resource: WorkloadResource, namespace: str, name: str) -> Json | None:
        return self._objects.get((resource, namespace, name))

    def listed(self, resource: WorkloadResource) -> bool:
        """Its objects were listed: its CRD exists and this cache follows it."""
        return resource in self._listed


def _key(resource: WorkloadResource, obj: Json) -> tuple[WorkloadResource, str, str]:
    meta = obj.get("metadata") or {}
    return resource, str(meta.get("namespace") or "default"), str(meta.get("name"))
