"""A member's rank from its controller's index labels."""

from __future__ import annotations

import pytest

from extender.levels.ranks import rank_of
from kube_rdma.core.objects import Json


def pod(labels: dict[str, str], annotations: dict[str, str] | None = None) -> Json:
    return {"metadata": {"labels": labels, "annotations": annotations or {}}}


@pytest.mark.parametrize(
    ("labels", "annotations", "master", "rank"),
    [
        ({"batch.kubernetes.io/job-completion-index": "7"}, {}, False, 7),
        ({}, {"batch.kubernetes.io/job-completion-index": "5"}, False, 5),
        (
            {
                "jobset.sigs.k8s.io/job-index": "2",
                "jobset.sigs.k8s.io/replicatedjob-replicas": "4",
                "batch.kubernetes.io/job-completion-index": "3",
            },
            {},
            False,
            11,  # job 2 of 4 Jobs of 4 pods (a gang of 16), its pod 3
        ),
        (
            {
                "training.kubeflow.org/replica-index": "3",
                "training.kubeflow.org/replica-type": "worker",
            },
            {},
            True,
            4,
        ),
        (
            {
                "training.kubeflow.org/replica-index": "3",
                "training.kubeflow.org/replica-type": "worker",
            },
            {},
            False,
            3,
        ),
        (
            {
                "training.kubeflow.org/replica-index": "0",
                "training.kubeflow.org/replica-type": "master",
            },
            {},
            True,
            0,
        ),
        ({"kueue.x-k8s.io/pod-group-pod-index": "9"}, {}, False, 9),
        ({"batch.kubernetes.io/job-completion-index": "x"}, {}, False, None),
        ({}, {}, False, None),
    ],
)
def test_rank(
    labels: dict[str, str], annotations: dict[str, str], master: bool, rank: int | None
) -> None:
    assert rank_of(pod(labels, annotations), 16, master) == rank
