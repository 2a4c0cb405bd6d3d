"""The resources of the controllers that own training pods, for a fake cluster that has their CRDs.

batch/v1 Jobs are built into every apiserver; the rest exist where Kubeflow's training operator,
the MPI operator, JobSet or Volcano is installed. `FakeApiServer(RESOURCES | WORKLOAD_RESOURCES)`
serves them all, as a cluster with every CRD installed; `python -m testbed.fakeapi --load` serves
those its snapshot holds objects of. Keys are kubectl's `plural.group`, since batch and Volcano
both serve `jobs`.

`native_gang_resources(version)` is Kubernetes' own gang API (`scheduling.k8s.io`) as one release
serves it: `v1alpha1` Workloads (1.35), `v1alpha2` (1.36), or `v1alpha3` / `v1beta1` (1.37)
Workloads and PodGroups.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from testbed.fakeapi.store import Resource

WORKLOAD_RESOURCES: Final[Mapping[str, Resource]] = {
    "jobs.batch": Resource("Job", True, "batch/v1", "jobs"),
    "pytorchjobs.kubeflow.org": Resource("PyTorchJob", True, "kubeflow.org/v1", "pytorchjobs"),
    "mpijobs.kubeflow.org": Resource("MPIJob", True, "kubeflow.org/v2beta1", "mpijobs"),
    "jobsets.jobset.x-k8s.io": Resource("JobSet", True, "jobset.x-k8s.io/v1alpha2", "jobsets"),
    "jobs.batch.volcano.sh": Resource("Job", True, "batch.volcano.sh/v1alpha1", "jobs"),
    "podgroups.scheduling.x-k8s.io": Resource(
        "PodGroup", True, "scheduling.x-k8s.io/v1alpha1", "podgroups"
    ),
    "podgroups.scheduling.volcano.sh": Resource(
        "PodGroup", True, "scheduling.volcano.sh/v1beta1", "podgroups"
    ),
}


NATIVE_GANG_VERSIONS: Final = ("v1alpha1", "v1alpha2", "v1alpha3", "v1beta1")


def native_gang_resources(version: str) -> dict[str, Resource]:
    """The scheduling.k8s.io Workloads (and PodGroups, from v1alpha2 on, and CompositePodGroups
    in v1alpha3) of one version."""
    api_version = f"scheduling.k8s.io/{version}"
    served = {"workloads.scheduling.k8s.io": Resource("Workload", True, api_version, "workloads")}
    if version != "v1alpha1":
        served["podgroups.scheduling.k8s.io"] = Resource("PodGroup", True, api_version, "podgroups")
    if version == "v1alpha3":  # CompositePodGroups are served in v1alpha3 only (1.37)
        served["compositepodgroups.scheduling.k8s.io"] = Resource(
            "CompositePodGroup", True, api_version, "compositepodgroups"
        )
    return served
