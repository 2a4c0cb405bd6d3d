"""A stream of training jobs, and what a Job controller does with it.

`Workload` is a deterministic stream: Poisson arrivals, gangs of 8-GPU pods with sizes from a mix
where bigger gangs are rarer, and singletons of 1 to 8 GPUs; `Jobs` is a stream written out (a
bench's one big gang among singletons). A `Job`'s pods carry what the
webhook and a Job controller put on them. `JobRunner` says which jobs are due to be created and
which have run their time, counting a job as running from when its last pod was bound.
"""

from __future__ import annotations

import hashlib
import heapq
import random
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import orjson

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kubesim.scheduler.pods import DEFAULT_SCHEDULER, GPU, RDMA, PodKey, bound_node


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

    @property
    def gang(self) -> bool:
        return self.members > 1 and self.together

    def pod_names(self) -> list[str]:
        return [f"{self.name}-{index:02d}" for index in range(self.members)]

    def pods(self, scheduler_name: str = DEFAULT_SCHEDULER) -> list[Json]:
        return [
            self._pod(name, index, scheduler_name) for index, name in enumerate(self.pod_names())
        ]

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
                    "batch.kubernetes.io/job-name": self.name,
                    "batch.kubernetes.io/job-completion-index": str(index),
                },
                "annotations": annotations,
            },
            "spec": {
                "schedulerName": scheduler_name,
                "restartPolicy": "Never",
                "containers": [self._container()],
            },
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


@dataclass
class JobState:
    job: Job
    bound: set[str] = field(default_factory=set)
    started: float | None = None
    """When its last pod was bound (it runs from then on)."""


class JobRunner:
    """Which jobs are due to be created, and which have run their time and are to be deleted."""

    def __init__(self, workload: JobStream) -> None:
        self._arrivals = deque(sorted(workload.stream(), key=lambda j: j.arrival))
        self.total = len(self._arrivals)
        self.jobs: dict[tuple[str, str], JobState] = {}
        self.finished: list[JobState] = []
        self._by_pod: dict[PodKey, tuple[str, str]] = {}
        self._ends: list[tuple[float, str, str]] = []
        self._start: float | None = None

    @property
    def done(self) -> bool:
        return not self._arrivals and not self.jobs

    @property
    def all_started(self) -> bool:
        """Every job arrived and has all its pods bound (some may have finished)."""
        return not self._arrivals and all(s.started is not None for s in self.jobs.values())

    def begin(self, now: float) -> None:
        self._start = now

    def due(self, now: float) -> list[Job]:
        start = now if self._start is None else self._start
        found = []
        while self._arrivals and start + self._arrivals[0].arrival <= now:
            job = self._arrivals.popleft()
            self.jobs[(job.namespace, job.name)] = JobState(job)
            for name in job.pod_names():
                self._by_pod[(job.namespace, name)] = (job.namespace, job.name)
            found.append(job)
        return found

    def ended(self, now: float) -> list[Job]:
        found = []
        while self._ends and self._ends[0][0] <= now:
            _, namespace, name = heapq.heappop(self._ends)
            state = self.jobs.pop((namespace, name))
            self.finished.append(state)
            found.append(state.job)
        return found

    def next_event(self) -> float | None:
        times = [end for end, _, _ in self._ends[:1]]
        if self._arrivals and self._start is not None:
            times.append(self._start + self._arrivals[0].arrival)
        return min(times, default=None)

    def pod_changed(self, key: PodKey, pod: Json | None, now: float) -> None:
        state = self.jobs.get(self._by_pod.get(key, ("", "")))
        if state is None or pod is None or not bound_node(pod):
            return
        state.bound.add(key[1])
        if state.started is None and len(state.bound) == state.job.members:
            state.started = now
            end = (now + state.job.duration, state.job.namespace, state.job.name)
            heapq.heappush(self._ends, end)
