"""JobSet (kubernetes-sigs/jobset, `jobset.x-k8s.io/v1alpha2`, api/jobset/v1alpha2/
jobset_types.go) and Kubeflow Trainer v2 (kubeflow/trainer), whose TrainJobs run as JobSets: the
TrainJob owns the JobSet, so the JobSet's keys cover both.

JobSet labels each child Job, and the Job controller each pod, with the JobSet's name, the
replicatedJob's name and replica count, and the child Job's index. A pod's rank is its Job's
index times the pods per Job, plus its completion index (indexed_job.py); the pods per Job are
the gang over the replicatedJob's replicas (a JobSet of one replicated Job).
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.frameworks._values import index

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
"""The pod's role: its replicatedJob's name (Trainer: `node`, `dataset-initializer`, ...)."""
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
TRAIN_JOB = "TrainJob"
"""Kubeflow Trainer's kind, the JobSet's owner when a TrainJob runs it."""

MARKS = (JOBSET_NAME,)
"""Keys whose presence marks a pod as a training job's."""


def jobset_name(both: Mapping[str, str]) -> str | None:
    """The JobSet the pod belongs to."""
    return both.get(JOBSET_NAME)


def rank(labels: Mapping[str, str], completion: int | None, gang_size: int) -> int | None:
    """The pod's rank in its JobSet's gang, given its completion index; None when the pod
    names no child Job index."""
    job = index(labels.get(JOB_INDEX))
    if job is None:
        return None
    replicas = index(labels.get(REPLICATED_JOB_REPLICAS)) or 1
    return job * max(gang_size // replicas, 1) + (completion or 0)
