"""How the training frameworks mark their pods (and, later, their gangs).

The same concept is a label in one project and an annotation in another, so every lookup here
reads both maps.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.frameworks import coscheduling, jobset, koordinator, kubeflow, kueue, volcano

TRAINING_KEYS: tuple[str, ...] = (
    *kubeflow.MARKS,
    *jobset.MARKS,  # Kubeflow Trainer v2 runs TrainJobs as JobSets: JobSet's keys cover both.
    *volcano.MARKS,
    *coscheduling.MARKS,
    *kueue.MARKS,
    *koordinator.MARKS,
)
"""Keys whose presence marks a pod as created by a distributed-training framework, each
framework's from its module in kube_rdma/core/frameworks/."""


def training_key(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The first training-framework key found on the pod's labels or annotations, if any."""
    for key in TRAINING_KEYS:
        if key in labels or key in annotations:
            return key
    return None
