"""A stream of training jobs, and what a Job controller does with it.

`Workload` is a deterministic stream: Poisson arrivals, gangs of 8-GPU pods with sizes from a mix
where bigger gangs are rarer, and singletons of 1 to 8 GPUs; `Jobs` is a stream written out (a
bench's one big gang among singletons). A `Job`'s pods carry what the
webhook and a Job controller put on them, its priority and preemption policy included;
kubesim/scheduler/job_controller.py runs them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import orjson

from kube_rdma.core import keys
from kube_rdma.core.frameworks import indexed_job
from kube_rdma.core.objects import Json
from kubesim.scheduler.pods import DEFAULT_SCHEDULER, GPU, RDMA

POD_GROUP_API = "scheduling.k8s.io/v1alpha2"
"""The PodGroup's API in 1.36 (1.37 serves v1beta1 too)."""


def applied(network: str) -> str:
    """The `kube-rdma.io/applied` record the webhook leaves (profile, its digest, network mode)."""
    profile = {"macvlan": "roce", "ib": "default"}.get(network, network)
    digest = hashlib.sha256(profile.encode()).hexdigest()[:12]
    return orjson.dumps({"profile": profile, "hash": digest, "network": network}).decode()


@dataclass(frozen=True)
class Job:
    """One training job: `members` pods of `gpus` GPUs each, a gang when more than one."""

    name: str
    namespace: str
    members: int
    gpus: int
    arrival: float
    """Seconds after the stream starts."""
    duration: float
    """Seconds it runs once all its pods are bound."""
    network: str = "macvlan"
    cpu_per_gpu: int = 16
    memory_per_gpu_gi: int = 128
    rdma: int = 1
    """RDMA units per pod, of `rdma_resource`."""
    rdma_resource: str = RDMA
    annotations: Mapping[str, str] = field(default_factory=dict)
    """Further pod annotations (a profile, kube-rdma.io/min-affinity, kube-rdma.io/rails)."""
    together: bool = True
    """False: its pods are independent, not a gang (it still runs once all are bound)."""
    priority: int = 0
    """spec.priority of its pods (what the apiserver fills in from a PriorityClass)."""
    preemption_policy: str | None = None
    """spec.preemptionPolicy of its pods: PreemptLowerPriority (None: the default) or Never."""
    pod_group: bool = False
    """A gang with a native PodGroup (scheduling.k8s.io, 1.36+): created before its pods, with
    `minCount` its members, each pod's `spec.schedulingGroup.podGroupName` naming it, as a
    1.36 Job that creates its Workload does. Its pods keep kube-rdma's gang annotations."""

    @property
    def gang(self) -> bool:
        return self.members > 1 and self.together

    def pod_names(self) -> list[str]:
        return [f"{self.name}-{index:02d}" for index in range(self.members)]

    def pods(self, scheduler_name: str = DEFAULT_SCHEDULER) -> list[Json]:
        return [
            self._pod(name, index, scheduler_name) for index, name in enumerate(self.pod_names())
        ]

    def pod_group_object(self) -> Json | None:
        """Its PodGroup (None unless a gang with `pod_group`)."""
        if not (self.gang and self.pod_group):
            return None
        return {
            "apiVersion": POD_GROUP_API,
            "kind": "PodGroup",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": self.members}}},
        }

    def pod(self, name: str, scheduler_name: str = DEFAULT_SCHEDULER) -> Json:
        """The pod of that name, as its controller creates it (again)."""
        return self._pod(name, self.pod_names().index(name), scheduler_name)

    def _pod(self, name: str, index: int, scheduler_name: str) -> Json:
        annotations = {keys.APPLIED: applied(self.network), **self.annotations}
        if self.gang:
            annotations |= {keys.GANG: self.name, keys.GANG_SIZE: str(self.members)}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    indexed_job.JOB_NAME: self.name,
                    indexed_job.COMPLETION_INDEX: str(index),
                },
                "annotations": annotations,
            },
            "spec": {
                "schedulerName": scheduler_name,
                "restartPolicy": "Never",
                "containers": [self._container()],
                "priority": self.priority,
            }
            | ({"preemptionPolicy": self.preemption_policy} if self.preemption_policy else {})
            | (
                {"schedulingGroup": {"podGroupName": self.name}}
                if self.gang and self.pod_group
                else {}
            ),
            "status": {"phase": "Pending"},
        }

    def _container(self) -> Json:
        amounts = {GPU: str(self.gpus)}
        if self.cpu_per_gpu:
            amounts["cpu"] = str(self.cpu_per_gpu * self.gpus)
        if self.memory_per_gpu_gi:
            amounts["memory"] = f"{self.memory_per_gpu_gi * self.gpus}Gi"
        if self.rdma:
            amounts[self.rdma_resource] = str(self.rdma)
        return {
            "name": "trainer",
            "image": "nvcr.io/nvidia/pytorch:24.05-py3",
            "resources": {"limits": amounts, "requests": dict(amounts)},
        }


class JobStream(Protocol):
    def stream(self) -> list[Job]:
        """The jobs, the same ones every time."""
        ...


@dataclass(frozen=True)
class Jobs:
    """A stream written out."""

    jobs: tuple[Job, ...]

    def stream(self) -> list[Job]:
        return sorted(self.jobs, key=lambda job: job.arrival)


@dataclass(frozen=True)
class Workload:
    """The parameters of a job stream; `stream()` gives the same jobs for the same parameters."""

    seed: int = 0
    jobs: int = 100
    mean_interarrival: float = 1.0
    """Seconds between arrivals, on average (exponentially distributed)."""
    duration: tuple[float, float] = (10.0, 60.0)
    """Run time in seconds, uniform between the two."""
    gang_fraction: float = 0.5
    gang_sizes: tuple[tuple[int, float], ...] = (
        (2, 30),
        (4, 25),
        (8, 20),
        (16, 12),
        (32, 8),
        (64, 5),
    )
    """(members, weight)"""
    singleton_gpus: tuple[tuple[int, float], ...] = ((1, 25), (2, 20), (4, 20), (8, 35))
    """(GPUs, weight)"""
    namespaces: tuple[str, ...] = ("team-llm", "team-vision", "ml-research")
    network: str = "macvlan"
    """The webhook's network mode: macvlan for Ethernet (RoCE) clusters, ib for InfiniBand."""

    def stream(self) -> list[Job]:
        rng = random.Random(self.seed)
        sizes, size_weights = zip(*self.gang_sizes, strict=True)
        gpus, gpu_weights = zip(*self.singleton_gpus, strict=True)
        arrival, jobs = 0.0, []
        for index in range(self.jobs):
            arrival += rng.expovariate(1.0 / self.mean_interarrival)
            gang = rng.random() < self.gang_fraction
            members = rng.choices(sizes, size_weights)[0] if gang else 1
            per_pod = 8 if gang else rng.choices(gpus, gpu_weights)[0]
            name = f"{'gang' if gang else 'job'}-{index:04d}"
            jobs.append(
                Job(
                    name=name,
                    namespace=rng.choice(self.namespaces),
                    members=members,
                    gpus=per_pod,
                    arrival=arrival,
                    duration=rng.uniform(*self.duration),
                    network=self.network,
                )
            )
        return jobs
