"""Kubernetes batch/v1 Jobs with `completionMode: Indexed` (kubernetes/kubernetes
pkg/apis/batch/types.go): the Job controller labels each pod with its Job's name and its
completion index. Kubernetes 1.28 and later label the index; older ones only annotate it, so
both are read. JobSet's child Jobs and MPI Operator's launcher are such Jobs too.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.frameworks._values import index

JOB_NAME = "batch.kubernetes.io/job-name"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def completion_index(labels: Mapping[str, str], annotations: Mapping[str, str]) -> int | None:
    """The pod's completion index, from its label or else its annotation; None when neither
    holds a whole number."""
    return index(labels.get(COMPLETION_INDEX) or annotations.get(COMPLETION_INDEX))
