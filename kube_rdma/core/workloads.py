"""How the training frameworks mark their pods (and, later, their gangs).

The same concept is a label in one project and an annotation in another, so every lookup here
reads both maps.
"""

from __future__ import annotations

from collections.abc import Mapping

# Keys whose presence marks a pod as created by a distributed-training framework.
TRAINING_KEYS: tuple[str, ...] = (
    # Kubeflow training-operator (PyTorchJob, MPIJob, TFJob, ...)
    "training.kubeflow.org/job-name",
    "training.kubeflow.org/replica-type",
    # Kubeflow Trainer v2 runs TrainJobs as JobSets; JobSet keys cover both.
    "jobset.sigs.k8s.io/jobset-name",
    # Volcano (annotation from its controller, label from Trainer)
    "scheduling.k8s.io/group-name",
    "scheduling.volcano.sh/group-name",
    "volcano.sh/job-name",
    # scheduler-plugins coscheduling
    "scheduling.x-k8s.io/pod-group",
    # Kueue plain pod groups
    "kueue.x-k8s.io/pod-group-name",
    # Koordinator gangs
    "gang.scheduling.koordinator.sh/name",
)


def training_key(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The first training-framework key found on the pod's labels or annotations, if any."""
    for key in TRAINING_KEYS:
        if key in labels or key in annotations:
            return key
    return None
