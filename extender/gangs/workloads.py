"""How many pods a training workload needs before any of them can run, read off its spec.

The rule behind every size: a gang counts only the pods that reach this scheduler together and
need GPUs or RDMA, so a gang never waits for a pod that will not come.
- PyTorchJob (Kubeflow training operator): every replica of every replica type whose template
  needs GPUs or RDMA (Master + Worker); with `elasticPolicy.minReplicas`, that many.
- MPIJob: the Workers. The Launcher needs no GPU, and with `launcherCreationPolicy:
  WaitForWorkersReady` it is created only once the Workers run.
- JobSet: replicas x parallelism over the replicatedJobs whose pod template needs GPUs or RDMA;
  Trainer's dataset and model initializers run before the trainer and are left out.
- Volcano Job: `minAvailable` (Volcano's own default, every task's replicas, without it).
- batch Job with `completionMode: Indexed`: `parallelism`.
Each rule returns the counted pods' roles too (replica types, replicatedJob names), so a pod of a
role left out is scheduled alone instead of joining a gang that does not count it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kube_rdma.core.frameworks import jobset as jobsets
from kube_rdma.core.frameworks import kubeflow
from kube_rdma.core.objects import Json

Needs = Callable[[Json], bool]
"""Whether a pod template requests GPUs or RDMA."""


@dataclass(frozen=True)
class Workload:
    """A workload's gang: its size, how that was counted, and which of its pods count."""

    kind: str
    name: str
    size: int
    detail: str
    """How the size was counted, e.g. `1 Master + 15 Worker`."""
    role_label: str = ""
    """The pod label naming a pod's role; empty when every pod counts."""
    roles: frozenset[str] = frozenset()
    """The counted roles, lowercase."""
    other_role_label: str = ""
    """A second label naming a pod's role, read when the first is absent (an MPIJob's workers:
    mpi-operator v2 labels `job-role`, the training-operator's MPIJob `replica-type`)."""

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.detail}"

    def counts(self, pod: Json) -> bool:
        if not self.role_label:
            return True
        labels = (pod.get("metadata") or {}).get("labels") or {}
        role = labels.get(self.role_label)
        if role is None and self.other_role_label:
            role = labels.get(self.other_role_label)
        return str(role or "").lower() in self.roles


def pytorch_job(obj: Json, needs: Needs) -> Workload | None:
    spec = obj.get("spec") or {}
    counted = _replica_specs(spec.get("pytorchReplicaSpecs"), needs)
    if not counted:
        return None
    roles = frozenset(kind.lower() for kind, _ in counted)
    minimum = (spec.get("elasticPolicy") or {}).get("minReplicas")
    if isinstance(minimum, int) and minimum > 0:
        detail = f"elasticPolicy.minReplicas {minimum}"
        return Workload("PyTorchJob", _name(obj), minimum, detail, kubeflow.REPLICA_TYPE, roles)
    size, detail = sum(n for _, n in counted), " + ".join(f"{n} {k}" for k, n in counted)
    return Workload("PyTorchJob", _name(obj), size, detail, kubeflow.REPLICA_TYPE, roles)


def mpi_job(obj: Json, needs: Needs) -> Workload | None:
    specs = (obj.get("spec") or {}).get("mpiReplicaSpecs") or {}
    counted = _replica_specs({"Worker": specs["Worker"]} if "Worker" in specs else {}, needs)
    if not counted:
        return None
    workers = counted[0][1]
    roles = frozenset({kubeflow.WORKER})
    # mpi-operator v2 labels its pods' role `job-role` and writes no `replica-type`
    # (pkg/controller/mpi_job_controller.go, defaultLabels); the training-operator's MPIJob
    # labels `replica-type`.
    return Workload(
        "MPIJob",
        _name(obj),
        workers,
        f"{workers} Worker",
        kubeflow.JOB_ROLE,
        roles,
        other_role_label=kubeflow.REPLICA_TYPE,
    )


def jobset(obj: Json, needs: Needs) -> Workload | None:
    counted, left_out = [], []
    for replicated in (obj.get("spec") or {}).get("replicatedJobs") or []:
        job_spec = (replicated.get("template") or {}).get("spec") or {}
        name = str(replicated.get("name"))
        if needs(job_spec.get("template") or {}):
            pods = _count(replicated.get("replicas")) * _count(job_spec.get("parallelism"))
            counted.append((name, pods))
        else:
            left_out.append(name)
    if not counted:
        return None
    detail = " + ".join(f"{n} {name}" for name, n in counted)
    if left_out:
        detail += f" ({', '.join(left_out)} not counted: no GPU or RDMA)"
    roles = frozenset(name.lower() for name, _ in counted)
    size = sum(n for _, n in counted)
    return Workload("JobSet", _name(obj), size, detail, jobsets.REPLICATED_JOB_NAME, roles)


def volcano_job(obj: Json, needs: Needs) -> Workload | None:
    spec = obj.get("spec") or {}
    minimum = spec.get("minAvailable")
    if isinstance(minimum, int) and minimum > 0:
        return Workload("Volcano Job", _name(obj), minimum, f"minAvailable {minimum}")
    tasks = sum(_count(task.get("replicas")) for task in spec.get("tasks") or [])
    if tasks < 1:
        return None
    return Workload("Volcano Job", _name(obj), tasks, f"{tasks} task replicas")


def indexed_job(obj: Json, needs: Needs) -> Workload | None:
    spec = obj.get("spec") or {}
    if spec.get("completionMode") != "Indexed" or not needs(spec.get("template") or {}):
        return None
    parallelism = _count(spec.get("parallelism"))
    return Workload("Indexed Job", _name(obj), parallelism, f"parallelism {parallelism}")


def _replica_specs(specs: Json | None, needs: Needs) -> list[tuple[str, int]]:
    """(replica type, replicas) of the types whose template needs GPUs or RDMA, sorted by type
    as the API serves a map."""
    return [
        (kind, _count(spec.get("replicas")))
        for kind, spec in sorted((specs or {}).items())
        if isinstance(spec, dict) and needs(spec.get("template") or {})
    ]


def _count(value: object) -> int:
    """A replicas or parallelism field: 1 when unset, as the APIs default it."""
    return value if isinstance(value, int) and value >= 0 else 1


def _name(obj: Json) -> str:
    return str((obj.get("metadata") or {}).get("name"))
