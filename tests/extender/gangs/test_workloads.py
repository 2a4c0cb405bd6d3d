"""The gang size of each training workload, read off its spec, with the exact counting shown."""

# ruff: noqa: E501 (a table of exact outcomes reads best one case per line)

from __future__ import annotations

from collections.abc import Callable

import pytest

from extender.gangs import workloads
from extender.gangs.workloads import Workload
from kube_rdma.core.frameworks.jobset import REPLICATED_JOB_NAME as REPLICATED_JOB
from kube_rdma.core.frameworks.kubeflow import JOB_ROLE, REPLICA_TYPE
from kube_rdma.core.objects import Json

GPU_POD = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}
CPU_POD = {"spec": {"containers": [{"resources": {"limits": {"cpu": "2"}}}]}}


def needs(template: Json) -> bool:
    return template is GPU_POD


def obj(spec: Json, name: str = "llama") -> Json:
    return {"metadata": {"name": name, "namespace": "team-a"}, "spec": spec}


def replicas(n: int | None, template: Json = GPU_POD) -> Json:
    return {"template": template} | ({} if n is None else {"replicas": n})


def replicated(name: str, n: int | None, parallelism: int | None, template: Json = GPU_POD) -> Json:
    job: Json = {"template": template} | (
        {} if parallelism is None else {"parallelism": parallelism}
    )
    return {"name": name, "template": {"spec": job}} | ({} if n is None else {"replicas": n})


MASTER_WORKER = frozenset({"master", "worker"})
CASES: list[tuple[str, Callable[[Json, workloads.Needs], Workload | None], Json, Workload | None]] = [
    ("pytorch-master-workers", workloads.pytorch_job, obj({"pytorchReplicaSpecs": {"Worker": replicas(15), "Master": replicas(1)}}),
     Workload("PyTorchJob", "llama", 16, "1 Master + 15 Worker", REPLICA_TYPE, MASTER_WORKER)),
    ("pytorch-replicas-default-to-one", workloads.pytorch_job, obj({"pytorchReplicaSpecs": {"Master": replicas(None), "Worker": replicas(3)}}),
     Workload("PyTorchJob", "llama", 4, "1 Master + 3 Worker", REPLICA_TYPE, MASTER_WORKER)),
    ("pytorch-cpu-master-left-out", workloads.pytorch_job, obj({"pytorchReplicaSpecs": {"Master": replicas(1, CPU_POD), "Worker": replicas(4)}}),
     Workload("PyTorchJob", "llama", 4, "4 Worker", REPLICA_TYPE, frozenset({"worker"}))),
    ("pytorch-elastic", workloads.pytorch_job, obj({"elasticPolicy": {"minReplicas": 4, "maxReplicas": 8}, "pytorchReplicaSpecs": {"Worker": replicas(8)}}),
     Workload("PyTorchJob", "llama", 4, "elasticPolicy.minReplicas 4", REPLICA_TYPE, frozenset({"worker"}))),
    ("pytorch-no-gpu", workloads.pytorch_job, obj({"pytorchReplicaSpecs": {"Worker": replicas(4, CPU_POD)}}), None),
    ("mpi-workers-only", workloads.mpi_job, obj({"mpiReplicaSpecs": {"Launcher": replicas(1, CPU_POD), "Worker": replicas(8)}}, "bert"),
     Workload("MPIJob", "bert", 8, "8 Worker", JOB_ROLE, frozenset({"worker"}), REPLICA_TYPE)),
    ("mpi-gpu-launcher-still-left-out", workloads.mpi_job, obj({"mpiReplicaSpecs": {"Launcher": replicas(1), "Worker": replicas(2)}}, "bert"),
     Workload("MPIJob", "bert", 2, "2 Worker", JOB_ROLE, frozenset({"worker"}), REPLICA_TYPE)),
    ("mpi-cpu-workers", workloads.mpi_job, obj({"mpiReplicaSpecs": {"Worker": replicas(8, CPU_POD)}}), None),
    ("jobset-trainer", workloads.jobset, obj({"replicatedJobs": [replicated("dataset-initializer", 1, 1, CPU_POD), replicated("model-initializer", 1, 1, CPU_POD), replicated("node", 1, 16)]}),
     Workload("JobSet", "llama", 16, "16 node (dataset-initializer, model-initializer not counted: no GPU or RDMA)", REPLICATED_JOB, frozenset({"node"}))),
    ("jobset-replicas-times-parallelism", workloads.jobset, obj({"replicatedJobs": [replicated("driver", None, None), replicated("workers", 4, 2)]}),
     Workload("JobSet", "llama", 9, "1 driver + 8 workers", REPLICATED_JOB, frozenset({"driver", "workers"}))),
    ("jobset-no-gpu", workloads.jobset, obj({"replicatedJobs": [replicated("cpu", 4, 1, CPU_POD)]}), None),
    ("volcano-min-available", workloads.volcano_job, obj({"minAvailable": 3, "tasks": [{"replicas": 4}]}),
     Workload("Volcano Job", "llama", 3, "minAvailable 3")),
    ("volcano-every-task", workloads.volcano_job, obj({"tasks": [{"replicas": 1}, {"replicas": 4}]}),
     Workload("Volcano Job", "llama", 5, "5 task replicas")),
    ("indexed-job", workloads.indexed_job, obj({"completionMode": "Indexed", "parallelism": 4, "completions": 4, "template": GPU_POD}),
     Workload("Indexed Job", "llama", 4, "parallelism 4")),
    ("non-indexed-job", workloads.indexed_job, obj({"parallelism": 4, "template": GPU_POD}), None),
    ("indexed-cpu-job", workloads.indexed_job, obj({"completionMode": "Indexed", "parallelism": 4, "template": CPU_POD}), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "workload", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_size(
    rule: Callable[[Json, workloads.Needs], Workload | None],
    workload: Json,
    expected: Workload | None,
) -> None:
    assert rule(workload, needs) == expected


@pytest.mark.parametrize(
    ("labels", "counted"),
    [({REPLICA_TYPE: "worker"}, True), ({REPLICA_TYPE: "Worker"}, True), ({REPLICA_TYPE: "launcher"}, False), ({}, False),
     # mpi-operator v2's workers: `job-role`, no `replica-type`; its launcher is never counted.
     ({JOB_ROLE: "worker"}, True), ({JOB_ROLE: "launcher"}, False), ({JOB_ROLE: "launcher", REPLICA_TYPE: "worker"}, False)],
)  # fmt: skip
def test_a_pod_counts_when_its_role_is_counted(labels: dict[str, str], counted: bool) -> None:
    gang = Workload("MPIJob", "bert", 8, "8 Worker", JOB_ROLE, frozenset({"worker"}), REPLICA_TYPE)
    assert gang.counts({"metadata": {"labels": labels}}) is counted
