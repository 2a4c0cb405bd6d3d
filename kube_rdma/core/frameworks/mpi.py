"""MPI Operator (kubeflow/mpi-operator, v2: MPIJob `kubeflow.org/v2beta1`) and the
training-operator's older MPIJob (`kubeflow.org/v1`).

MPI Operator v2 writes no keys of its own: its pods carry Kubeflow's labels (kubeflow.py),
`training.kubeflow.org/operator-name: mpi-operator`, `job-name`, `job-role` (`launcher` or
`worker`) and, on workers, `replica-index` (pkg/controller/mpi_job_controller.go,
`defaultLabels` and `newWorker`); the training-operator's MPIJob labels `replica-type` instead,
with the operator name `mpijob-controller`. What is MPI's here: its API version, operator
names, roles, and which pods are workers (whose ranks mpirun starts over ssh). The launcher is a
batch Job's pod (indexed_job.py) that needs no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.frameworks import kubeflow
from kube_rdma.core.objects import Json

GROUP = kubeflow.GROUP
VERSION = "v2beta1"
TRAINING_OPERATOR_VERSION = "v1"
"""The training-operator's MPIJob, where a cluster still serves it."""

OPERATOR = "mpi-operator"
TRAINING_OPERATOR_CONTROLLER = "mpijob-controller"
LAUNCHER = "launcher"
WORKER = "worker"


def is_worker(metadata: Json) -> bool:
    """An MPIJob worker: labelled by mpi-operator (job-role) or by the training-operator's
    MPIJob (replica-type, or an MPIJob owner)."""
    labels: Mapping[str, str] = metadata.get("labels") or {}
    if labels.get(kubeflow.JOB_ROLE) == WORKER:
        return labels.get(kubeflow.OPERATOR_NAME) == OPERATOR
    if kubeflow.replica_type(labels) != WORKER:
        return False
    owners = metadata.get("ownerReferences") or []
    return labels.get(kubeflow.OPERATOR_NAME) in (OPERATOR, TRAINING_OPERATOR_CONTROLLER) or any(
        o.get("kind") == "MPIJob" for o in owners
    )
