"""Kubeflow's training-operator (kubeflow/training-operator, v1: PyTorchJob, TFJob, XGBoostJob,
PaddleJob, JAXJob and its MPIJob v1) and the labels it puts on each replica's pods
(kubeflow/common pkg/apis/common/v1/constants.go, which MPI Operator v2 shares: see mpi.py).

A pod's rank is its `replica-index` within its replica type; a PyTorchJob's Master is rank 0 and
its Workers follow (worker i is rank i + 1, as the operator sets RANK), when the gang has a
Master.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.frameworks._values import index

GROUP = "kubeflow.org"
"""The API group of the training-operator's jobs (and of MPI Operator's MPIJob)."""
VERSION = "v1"

JOB_NAME = "training.kubeflow.org/job-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
"""The pod's replica type, lowercase (`master`, `worker`, `launcher`, `ps`, ...)."""
REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"
"""`master` on a PyTorchJob's Master (MPI Operator v2: `launcher` or `worker`)."""
OPERATOR_NAME = "training.kubeflow.org/operator-name"
"""Which controller created the pod, e.g. `pytorchjob-controller`."""

MASTER = "master"
WORKER = "worker"
PYTORCH_CONTROLLER = "pytorchjob-controller"
"""The operator name the training-operator's PyTorchJob controller writes."""

MARKS = (JOB_NAME, REPLICA_TYPE)
"""Keys whose presence marks a pod as a training job's."""


def job_name(both: Mapping[str, str]) -> str | None:
    """The training job the pod belongs to."""
    return both.get(JOB_NAME)


def replica_type(labels: Mapping[str, str]) -> str:
    """The pod's replica type, lowercase; empty when it has none."""
    return str(labels.get(REPLICA_TYPE) or "").lower()


def rank(labels: Mapping[str, str], has_master: bool) -> int | None:
    """The pod's rank in its job; None without a replica index."""
    found = index(labels.get(REPLICA_INDEX))
    if found is None:
        return None
    return found + 1 if has_master and replica_type(labels) == WORKER else found
