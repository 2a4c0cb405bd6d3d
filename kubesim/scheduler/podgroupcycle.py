"""kube-scheduler's PodGroup scheduling cycle (1.36 and later, with the GenericWorkload gate).

When the pod popped from the queue names a PodGroup, kube-scheduler takes the group's other
unscheduled pods out of the queue too (podGroupInfoForPod), orders them by priority, then by
when they were first tried, and runs the scheduling algorithm for each in turn on one snapshot,
each pod placed counting for the next (podGroupSchedulingDefaultAlgorithm in
pkg/scheduler/schedule_one_podgroup.go). A pod that fits nowhere is skipped; the group is
schedulable as soon as GangScheduling's check passes (minCount pods assumed or bound). Then the
pods placed go to their binding cycles and those skipped back to the queue, unschedulable;
otherwise every pod placed is taken back and the whole group returns to the queue.

Where it simplifies: a pod of the group that fits nowhere does not preempt (upstream it may, and
the group then waits for the preemption); pods with resource claims take the pod-by-pod path.
"""

from __future__ import annotations

from typing import Final, Protocol

from kube_rdma.core.objects import Json
from kubesim.scheduler.attempt import Attempt
from kubesim.scheduler.clock import Clock
from kubesim.scheduler.extender_client import ExtenderClient, ExtenderError
from kubesim.scheduler.gangscheduling import GangScheduling, GroupKey
from kubesim.scheduler.informer import Informer
from kubesim.scheduler.placement import Placement, Unschedulable
from kubesim.scheduler.pods import PodKey
from kubesim.scheduler.queue import QueuedPod, SchedulingQueue


class GroupCycleHost(Protocol):
    """What a PodGroup scheduling cycle uses of the scheduler running it (GroupCycleHost)."""

    clock: Clock
    queue: SchedulingQueue

    @property
    def informer(self) -> Informer: ...

    placement: Placement
    gangs: GangScheduling | None
    assumed: dict[PodKey, str]
    in_flight: dict[PodKey, QueuedPod]

    def schedulable(self, pod: Json) -> bool: ...

    def account(self, key: PodKey) -> None: ...

    def start_binding(self, queued: QueuedPod, pod: Json, node: str) -> None: ...

    def extender_for(self, pod: Json) -> ExtenderClient | None: ...

    def requeue(self, queued: QueuedPod, parked: bool = False, any_event: bool = False) -> None: ...


GROUP_UNSCHEDULABLE: Final = "pod group is unschedulable"


async def schedule_group(sched: GroupCycleHost, first: QueuedPod, group: GroupKey) -> list[Attempt]:
    """One PodGroup scheduling cycle, `first` the pod popped; an attempt per pod of the group."""
    gangs = sched.gangs
    assert gangs is not None
    members = [first]
    for key in gangs.unscheduled(group):
        if key != first.key and (queued := sched.queue.take(key)) is not None:
            members.append(queued)
    members.sort(key=lambda q: (-q.priority, q.seq))
    for queued in members:
        sched.in_flight[queued.key] = queued
    placed: list[tuple[QueuedPod, str, int]] = []
    rejected: list[tuple[QueuedPod, str]] = []
    attempts: list[Attempt] = []
    now = sched.clock.now()
    for queued in members:
        pod = sched.informer.pod(queued.key)
        if pod is None or not sched.schedulable(pod):
            sched.in_flight.pop(queued.key, None)
            attempts.append(Attempt(queued.key, now, "gone"))
            continue
        try:
            node, sampled = await sched.placement.find_node(pod, sched.extender_for(pod))
        except ExtenderError as e:
            _take_back(sched, placed)
            for other in members:
                sched.in_flight.pop(other.key, None)
                sched.requeue(other)
            return [Attempt(q.key, now, "error", message=str(e)) for q in members]
        except Unschedulable as e:
            rejected.append((queued, str(e)))
            continue
        sched.assumed[queued.key] = node
        sched.account(queued.key)
        placed.append((queued, node, sampled))
    wanted = gangs.min_count(group) or 1
    scheduled = gangs.scheduled_count(group)
    if scheduled < wanted:
        _take_back(sched, placed)
        why = f"{GROUP_UNSCHEDULABLE}: minCount ({wanted}) cannot be satisfied: {scheduled} fit"
        for queued, _, _ in placed:
            sched.in_flight.pop(queued.key, None)
            sched.requeue(queued, parked=True)
            attempts.append(Attempt(queued.key, now, "unschedulable", None, why))
    else:
        for queued, node, sampled in placed:
            pod = sched.informer.pod(queued.key)
            assert pod is not None
            sched.start_binding(queued, pod, node)
            attempts.append(Attempt(queued.key, now, "assumed", node, sampled=sampled))
    for queued, message in rejected:
        sched.in_flight.pop(queued.key, None)
        sched.requeue(queued, parked=True)
        attempts.append(Attempt(queued.key, now, "unschedulable", None, message))
    return attempts


def _take_back(sched: GroupCycleHost, placed: list[tuple[QueuedPod, str, int]]) -> None:
    for queued, _, _ in placed:
        sched.assumed.pop(queued.key, None)
        sched.account(queued.key)
