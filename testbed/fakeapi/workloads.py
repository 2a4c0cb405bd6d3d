"""The resources of the controllers that own training pods, for a fake cluster that has their CRDs.

batch/v1 Jobs are built into every apiserver; the rest exist where Kubeflow's training operator,
the MPI operator, JobSet or Volcano is installed. `FakeApiServer(RESOURCES | WORKLOAD_RESOURCES)`
serves them all, as a cluster with every CRD installed; `python -m testbed.fakeapi --load` serves
those its snapshot holds objects of. Keys are kubectl's `plural.group`, since batch and Volcano
both serve `jobs`.
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
