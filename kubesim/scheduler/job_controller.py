"""What the controllers of training jobs do with a stream of jobs: create each job's pods when it
arrives, delete them when it has run its time, and recreate a pod that something else deleted.

A job runs from when its last pod is bound. A pod deleted while its job is live (preempted by
kube-scheduler, evicted, deleted by hand) is recreated at once, Pending, as a Job controller or
a training operator does; the job's run so far is lost, and it starts again from scratch once
all its pods are bound again (training frameworks restart every worker when one goes: a job
does not resume mid-run). The GPU-time so lost is counted, and so is a gang that kube-scheduler's
preemption left partly running: some members deleted with the DisruptionTarget condition of
reason PreemptionByScheduler while others stayed bound, holding GPUs for a job that cannot run
(until the gang is whole again, or its last bound member is gone too).
"""

from __future__ import annotations

import contextlib
import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import Conflict, NotFound
from kubesim.scheduler.apiserver import ApiCalls
from kubesim.scheduler.pods import PodKey, bound_node
from kubesim.scheduler.preemption import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from kubesim.scheduler.workload import Job, JobStream


@dataclass
class JobState:
    job: Job
    bound: set[str] = field(default_factory=set)
    started: float | None = None
    """When its last pod was bound, for the run in progress (it runs from then on)."""
    first_started: float | None = None
    """When all its pods were first bound: when it was placed."""
    run: int = 0
    """Counts its starts, so that the end of a run that was cut short is ignored."""
    disruptions: int = 0
    """Times a pod of it was deleted while the job was live."""
    lost_gpu_seconds: float = 0.0
    """GPU-time of runs cut short."""
    broken: list[tuple[float, float | None]] = field(default_factory=list)
    """Spells during which kube-scheduler's preemption had taken some of its bound members and
    others stayed bound: (start, end), end None while it lasts."""

    def partial_by_preemption(self, end: float, longer_than: float) -> int:
        """The spells longer than `longer_than` seconds (one in progress lasting to `end`)."""
        return sum((end if e is None else e) - s > longer_than for s, e in self.broken)


class JobRunner:
    """Which jobs are due to be created, which pods to create again, and which jobs have run
    their time and are to be deleted."""

    def __init__(self, workload: JobStream) -> None:
        self._arrivals = deque(sorted(workload.stream(), key=lambda j: j.arrival))
        self.total = len(self._arrivals)
        self.jobs: dict[tuple[str, str], JobState] = {}
        self.finished: list[JobState] = []
        self._by_pod: dict[PodKey, tuple[str, str]] = {}
        self._ends: list[tuple[float, str, str, int]] = []
        self._recreate: list[tuple[Job, str]] = []
        self._start: float | None = None

    async def act(
        self,
        apiserver: ApiCalls,
        now: float,
        scheduler_name: str,
        pod_group_changed: Callable[[Json | None, Json | None], None],
    ) -> None:
        """Create the due jobs' pods (after their PodGroup, as 1.36's Job controller creates
        the Workload's), the pods to create again, and delete the finished jobs' pods."""
        for job in self.due(now):
            if (group := job.pod_group_object()) is not None:
                pod_group_changed(None, group)
            for pod in job.pods(scheduler_name):
                await apiserver.create_pod(pod)
        for job, name in self.to_recreate():
            with contextlib.suppress(Conflict):
                await apiserver.create_pod(job.pod(name, scheduler_name))
        for job in self.ended(now):
            for name in job.pod_names():
                with contextlib.suppress(NotFound):
                    await apiserver.delete_pod(job.namespace, name)
            if (group := job.pod_group_object()) is not None:
                pod_group_changed(group, None)

    @property
    def done(self) -> bool:
        return not self._arrivals and not self.jobs

    @property
    def all_started(self) -> bool:
        """Every job arrived and is running (or ran), none waiting to restart."""
        return not self._arrivals and all(s.started is not None for s in self.jobs.values())

    def states(self) -> list[JobState]:
        """Every job that arrived, finished or not."""
        return [*self.finished, *self.jobs.values()]

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

    def to_recreate(self) -> list[tuple[Job, str]]:
        """The pods deleted under a live job since the last call: (job, pod name)."""
        found, self._recreate = self._recreate, []
        return [(job, name) for job, name in found if (job.namespace, job.name) in self.jobs]

    def ended(self, now: float) -> list[Job]:
        found = []
        while self._ends and self._ends[0][0] <= now:
            _, namespace, name, run = heapq.heappop(self._ends)
            state = self.jobs.get((namespace, name))
            if state is None or state.run != run or state.started is None:
                continue  # a run cut short
            del self.jobs[(namespace, name)]
            self.finished.append(state)
            found.append(state.job)
        return found

    def next_event(self) -> float | None:
        times = [end for end, *_ in self._ends[:1]]
        if self._arrivals and self._start is not None:
            times.append(self._start + self._arrivals[0].arrival)
        return min(times, default=None)

    def pod_changed(self, key: PodKey, old: Json | None, new: Json | None, now: float) -> None:
        state = self.jobs.get(self._by_pod.get(key, ("", "")))
        if state is None:
            return
        if new is None:
            self._deleted(state, key[1], old, now)
            return
        if not bound_node(new):
            return
        state.bound.add(key[1])
        if len(state.bound) == state.job.members:
            _mend(state, now)
        if state.started is None and len(state.bound) == state.job.members:
            state.started = now
            if state.first_started is None:
                state.first_started = now
            state.run += 1
            job = state.job
            heapq.heappush(self._ends, (now + job.duration, job.namespace, job.name, state.run))

    def _deleted(self, state: JobState, name: str, old: Json | None, now: float) -> None:
        """A pod of a live job deleted by someone else: the run is lost, the pod recreated."""
        job = state.job
        was_bound = name in state.bound
        state.bound.discard(name)
        state.disruptions += 1
        if state.started is not None:
            state.lost_gpu_seconds += (now - state.started) * job.gpus * job.members
            state.started = None
        spell_open = bool(state.broken) and state.broken[-1][1] is None
        if not state.bound:
            _mend(state, now)
        elif job.gang and was_bound and _preempted_by_scheduler(old) and not spell_open:
            state.broken.append((now, None))
        self._recreate.append((job, name))


def _mend(state: JobState, now: float) -> None:
    """The gang is whole again, or none of it is left bound: a partial spell ends."""
    if state.broken and state.broken[-1][1] is None:
        state.broken[-1] = (state.broken[-1][0], now)


def _preempted_by_scheduler(pod: Json | None) -> bool:
    for condition in ((pod or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == DISRUPTION_TARGET:
            return bool(condition.get("reason") == PREEMPTION_BY_SCHEDULER)
    return False
