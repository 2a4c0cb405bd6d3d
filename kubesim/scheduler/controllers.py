"""What Kubeflow's training operator, the MPI operator and JobSet create for a training job.

Each creates its owner object first, then the pods (an MPIJob's launcher and a JobSet's pods
through batch Jobs), with the ownerReferences and labels those controllers put on them and no
kube-rdma gang key: the extender has to find each gang from the owners alone. `Controllers`
creates the owners through `create` (a test apiserver's, taking kubectl's resource name such as
`jobs.batch`) and returns the pods still to be created, so a test decides in which
order they arrive; `gang_of` tells a Recorder which gang each pod really belongs to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kube_rdma.core import keys
from kube_rdma.core.frameworks import indexed_job, jobset, kubeflow, mpi
from kube_rdma.core.objects import Json
from kubesim.scheduler.pods import DEFAULT_SCHEDULER, GPU, RDMA, PodKey, pod_key
from kubesim.scheduler.recorder import GangKey
from kubesim.scheduler.workload import applied

Create = Callable[[str, Json], Json]
"""(kubectl's resource name, object) -> the object as stored, with its uid."""


@dataclass(frozen=True)
class Replicas:
    """One replica type (Master, Worker) or replicatedJob: `count` x `parallelism` pods."""

    name: str
    count: int
    gpus: int
    parallelism: int = 1


class Controllers:
    def __init__(self, create: Create, scheduler_name: str = DEFAULT_SCHEDULER) -> None:
        self._create = create
        self._scheduler = scheduler_name
        self._members: dict[PodKey, tuple[GangKey, int]] = {}

    def gang_of(self, pod: Json) -> tuple[GangKey, int] | None:
        """The pod's gang as its job defines it (for a Recorder); None for a pod alone."""
        return self._members.get(pod_key(pod))

    def pytorch_job(self, namespace: str, name: str, roles: Sequence[Replicas]) -> list[Json]:
        specs = {r.name: {"replicas": r.count, "template": self._template(r.gpus)} for r in roles}
        job = self._owner("pytorchjobs", kubeflow.GROUP, kubeflow.VERSION, "PyTorchJob")(
            namespace, name, {"pytorchReplicaSpecs": specs}
        )
        pods = [
            self._kubeflow_pod(job, role.name, index, role.gpus, kubeflow.PYTORCH_CONTROLLER)
            for role in roles
            for index in range(role.count)
        ]
        return self._gang(namespace, name, pods)

    def mpi_job(self, namespace: str, name: str, workers: int, gpus: int) -> list[Json]:
        specs = {
            "Launcher": {"replicas": 1, "template": self._template(0)},
            "Worker": {"replicas": workers, "template": self._template(gpus)},
        }
        spec = {"launcherCreationPolicy": "AtStartup", "mpiReplicaSpecs": specs}
        job = self._owner("mpijobs", mpi.GROUP, mpi.VERSION, "MPIJob")(namespace, name, spec)
        members = [self._mpi_worker(job, index, gpus) for index in range(workers)]
        launcher_job = self._batch_job(job, f"{name}-launcher", 1, 0, {})
        launcher = self._job_pod(launcher_job, 0, 0)
        launcher["metadata"]["labels"] |= {kubeflow.JOB_ROLE: mpi.LAUNCHER}
        return [*self._gang(namespace, name, members), launcher]

    def jobset(
        self, namespace: str, name: str, replicated: Sequence[Replicas], *, train_job: bool = False
    ) -> list[Json]:
        """A JobSet (owned by a Trainer TrainJob of its name with `train_job`): replicatedJobs
        without GPUs (initializers) are created but are not part of the gang."""
        specs = [
            {
                "name": r.name,
                "replicas": r.count,
                "template": {"spec": {"parallelism": r.parallelism, "completions": r.parallelism,
                                      "template": self._template(r.gpus)}},
            }
            for r in replicated
        ]  # fmt: skip
        owner = _train_job_ref(namespace, name) if train_job else None
        created = self._owner("jobsets", jobset.GROUP, jobset.VERSION, "JobSet")(
            namespace, name, {"replicatedJobs": specs}, owner
        )
        members: list[Json] = []
        others: list[Json] = []
        for r in replicated:
            for index in range(r.count):
                labels = {jobset.JOBSET_NAME: name, jobset.REPLICATED_JOB_NAME: r.name}
                job = self._batch_job(created, f"{name}-{r.name}-{index}", r.parallelism, r.gpus,
                                      labels | {jobset.JOB_INDEX: str(index)})  # fmt: skip
                pods = [self._job_pod(job, k, r.gpus) for k in range(r.parallelism)]
                (members if r.gpus else others).extend(pods)
        return [*others, *self._gang(namespace, name, members)]

    # Objects

    def _owner(self, plural: str, group: str, version: str, kind: str) -> Callable[..., Json]:
        def create(namespace: str, name: str, spec: Json, owner: Json | None = None) -> Json:
            meta: Json = {"name": name, "namespace": namespace}
            if owner is not None:
                meta["ownerReferences"] = [owner]
            obj = {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": meta, "spec": spec}
            return self._create(f"{plural}.{group}", obj)

        return create

    def _batch_job(self, owner: Json, name: str, parallelism: int, gpus: int, labels: Json) -> Json:
        spec = {
            "completionMode": "Indexed",
            "parallelism": parallelism,
            "completions": parallelism,
            "template": self._template(gpus),
        }
        meta = owner["metadata"]
        obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": meta["namespace"], "labels": labels,
                         "ownerReferences": [_controller_ref(owner)]},
            "spec": spec,
        }  # fmt: skip
        return self._create("jobs.batch", obj)

    def _job_pod(self, job: Json, index: int, gpus: int) -> Json:
        name = job["metadata"]["name"]
        labels = {
            **(job["metadata"].get("labels") or {}),
            indexed_job.JOB_NAME: name,
            indexed_job.COMPLETION_INDEX: str(index),
        }
        return self._pod(job, f"{name}-{index}", labels, gpus)

    def _kubeflow_pod(self, job: Json, role: str, index: int, gpus: int, operator: str) -> Json:
        labels = {
            kubeflow.JOB_NAME: job["metadata"]["name"],
            kubeflow.OPERATOR_NAME: operator,
            kubeflow.REPLICA_TYPE: role.lower(),
            kubeflow.REPLICA_INDEX: str(index),
        }
        if role == "Master":
            labels[kubeflow.JOB_ROLE] = kubeflow.MASTER
        return self._pod(job, f"{job['metadata']['name']}-{role.lower()}-{index}", labels, gpus)

    def _mpi_worker(self, job: Json, index: int, gpus: int) -> Json:
        """As mpi-operator v2 labels a worker: its role as `job-role`, no `replica-type`
        (pkg/controller/mpi_job_controller.go, defaultLabels and newWorker)."""
        labels = {
            kubeflow.JOB_NAME: job["metadata"]["name"],
            kubeflow.OPERATOR_NAME: mpi.OPERATOR,
            kubeflow.JOB_ROLE: mpi.WORKER,
            kubeflow.REPLICA_INDEX: str(index),
        }
        return self._pod(job, f"{job['metadata']['name']}-worker-{index}", labels, gpus)

    def _pod(self, owner: Json, name: str, labels: Json, gpus: int) -> Json:
        template = self._template(gpus)
        meta = {"name": name, "namespace": owner["metadata"]["namespace"], "labels": labels,
                "ownerReferences": [_controller_ref(owner)]}  # fmt: skip
        if gpus:
            meta["annotations"] = {keys.APPLIED: applied("macvlan")}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"],
                "status": {"phase": "Pending"}}  # fmt: skip

    def _template(self, gpus: int) -> Json:
        amounts = {"cpu": str(16 * gpus or 1), "memory": f"{128 * gpus or 1}Gi"}
        if gpus:
            amounts |= {GPU: str(gpus), RDMA: "1"}
        container = {"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                     "resources": {"limits": amounts, "requests": dict(amounts)}}  # fmt: skip
        spec = {"schedulerName": self._scheduler, "restartPolicy": "Never"}
        return {"spec": spec | {"containers": [container]}}

    def _gang(self, namespace: str, name: str, pods: list[Json]) -> list[Json]:
        for pod in pods:
            self._members[pod_key(pod)] = ((namespace, name), len(pods))
        return pods


def _controller_ref(owner: Json) -> Json:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip


def _train_job_ref(namespace: str, name: str) -> Json:
    """Trainer's TrainJob, which the extender never reads: only its name is shown."""
    api_version = f"{jobset.TRAINER_GROUP}/{jobset.TRAINER_VERSION}"
    return {"apiVersion": api_version, "kind": jobset.TRAIN_JOB, "name": name,
            "uid": f"trainjob-{namespace}-{name}", "controller": True}  # fmt: skip
