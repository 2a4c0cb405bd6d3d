"""Nodes and pods for the emulator's tests, and the scheduler settings they run with."""

from __future__ import annotations

from kube_rdma.core.objects import Json
from kubesim.scheduler import GPU, RDMA, Attempt, SchedulerConfig

FAST = SchedulerConfig(backoff_initial=0.05, backoff_max=0.2)


def node(name: str, gpus: int = 8, labels: dict[str, str] | None = None) -> Json:
    allocatable = {"cpu": "96", "memory": "1Ti", "pods": "110", GPU: str(gpus), RDMA: str(gpus)}
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    gpus: int = 1,
    *,
    annotations: dict[str, str] | None = None,
    scheduler: str = "default-scheduler",
) -> Json:
    limits = {GPU: str(gpus), RDMA: "1"} if gpus else {"cpu": "1"}
    return {
        "metadata": {"name": name, "namespace": "team-a", "annotations": annotations or {}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "main", "resources": {"limits": limits}}],
        },
        "status": {"phase": "Pending"},
    }


def summary(attempt: Attempt | None) -> tuple[str, str, str | None, int]:
    assert attempt is not None
    return attempt.pod[1], attempt.outcome, attempt.node, attempt.sampled
