"""kube-scheduler's scheduling queue: the activeQ and the backoffQ.

Follows pkg/scheduler/backend/queue/scheduling_queue.go: the activeQ in PrioritySort order
(priority, then the time the pod last entered the queue), and a pod that failed an attempt waits
out calculateBackoffDuration before it is active again.

An unschedulable pod is parked, as in kube-scheduler's unschedulablePods, when the queue is given
`max_unschedulable` (podMaxInUnschedulablePodsDuration): it waits for a cluster event
(`move_all`, which kube-scheduler calls on a pod deleted or a Node changed) or that long, then
for the rest of its backoff. A pod some of whose nodes the extender rejected is moved by any
cluster event, a pod bound or changed on a node included (schedule_one.go puts the extender
among its rejectors, and extenders register no events: kubernetes#122019): `move_any_event`.
Without `max_unschedulable`, the simplification real-time runs use: an unschedulable pod waits
out its backoff and is retried; on a busy cluster an event comes within the backoff anyway.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from kubesim.scheduler.clock import Clock
from kubesim.scheduler.config import backoff_duration
from kubesim.scheduler.pods import PodKey


@dataclass(eq=False)
class QueuedPod:
    key: PodKey
    priority: int
    timestamp: float
    """When it last entered the queue: PrioritySort's tie-breaker."""
    seq: int
    attempts: int = 0
    backoff_until: float = 0.0
    ticket: int = 0
    """Changes whenever the pod moves, so that heap entries it left behind are skipped."""


class SchedulingQueue:
    """Pods in PrioritySort order, and pods waiting out their backoff after a failed attempt."""

    def __init__(
        self, clock: Clock, initial: float, maximum: float, max_unschedulable: float | None = None
    ) -> None:
        self._clock, self._initial, self._maximum = clock, initial, maximum
        self._max_unschedulable = max_unschedulable
        self._parked: dict[PodKey, float] = {}
        """Unschedulable pods and when they were parked, oldest first."""
        self._any_event: set[PodKey] = set()
        """The parked pods that any cluster event moves (the extender rejected nodes)."""
        self._pods: dict[PodKey, QueuedPod] = {}
        self._active: list[tuple[int, float, int, int, PodKey]] = []
        self._backoff: list[tuple[float, int, int, PodKey]] = []
        self._seq = itertools.count()
        self._tickets = itertools.count(1)

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def get(self, key: PodKey) -> QueuedPod | None:
        return self._pods.get(key)

    def add(self, key: PodKey, priority: int = 0) -> None:
        """A new pending pod (nothing when it is queued already)."""
        if key not in self._pods:
            queued = QueuedPod(key, priority, self._clock.now(), next(self._seq))
            self._pods[key] = queued
            self._activate(queued)

    def remove(self, key: PodKey) -> None:
        self._pods.pop(key, None)
        self._parked.pop(key, None)
        self._any_event.discard(key)

    def take(self, key: PodKey) -> QueuedPod | None:
        """That pod out of the queue wherever it waits (PopSpecificPod), counted as an attempt;
        None when it is not queued."""
        queued = self._pods.get(key)
        if queued is not None:
            self.remove(key)
            queued.attempts += 1
        return queued

    def activate(self, keys: Iterable[PodKey]) -> None:
        """Those pods ready at once, backoff or not (a plugin's Activate)."""
        for key in keys:
            queued = self._pods.get(key)
            if queued is not None:
                self._parked.pop(key, None)
                self._any_event.discard(key)
                self._activate(queued)

    def pop(self) -> QueuedPod | None:
        """The next pod to try, counted as an attempt; None when none is ready."""
        self._flush()
        while self._active:
            *_, ticket, key = heapq.heappop(self._active)
            queued = self._pods.get(key)
            if queued is not None and queued.ticket == ticket:
                del self._pods[key]
                queued.attempts += 1
                return queued
        return None

    def back_off(self, queued: QueuedPod) -> None:
        """Back in the queue after a failed attempt, ready once its backoff has passed."""
        now = self._clock.now()
        queued.timestamp = now
        queued.backoff_until = now + backoff_duration(queued.attempts, self._initial, self._maximum)
        queued.ticket = next(self._tickets)
        self._pods[queued.key] = queued
        heapq.heappush(self._backoff, (queued.backoff_until, queued.seq, queued.ticket, queued.key))

    def park(self, queued: QueuedPod, any_event: bool = False) -> None:
        """Back in the queue after an attempt found it unschedulable: parked until `move_all`
        (or with `any_event`, `move_any_event`) or `max_unschedulable` seconds, then as
        `back_off`; without `max_unschedulable`, as `back_off`."""
        if any_event:
            self._any_event.add(queued.key)
        if self._max_unschedulable is None:
            self.back_off(queued)
            return
        now = self._clock.now()
        queued.timestamp = now
        queued.backoff_until = now + backoff_duration(queued.attempts, self._initial, self._maximum)
        queued.ticket = next(self._tickets)
        self._pods[queued.key] = queued
        self._parked.pop(queued.key, None)  # kept in the order of parking, which _flush reads
        self._parked[queued.key] = now

    def move_all(self) -> None:
        """A cluster event that may make parked pods schedulable: they wait out their backoff."""
        for key in list(self._parked):
            self._unpark(key)

    def move_any_event(self) -> None:
        """Another cluster event (a pod bound or changed on a node): the parked pods that the
        extender rejected wait out their backoff."""
        for key in [k for k in self._any_event if k in self._parked]:
            self._unpark(key)

    def next_ready(self) -> float | None:
        """When the next backing-off or parked pod becomes ready."""
        while self._backoff:
            _, _, ticket, key = self._backoff[0]
            queued = self._pods.get(key)
            if queued is not None and queued.ticket == ticket:
                break
            heapq.heappop(self._backoff)
        times = [self._backoff[0][0]] if self._backoff else []
        if self._parked and self._max_unschedulable is not None:
            times.append(next(iter(self._parked.values())) + self._max_unschedulable)
        return min(times, default=None)

    def _unpark(self, key: PodKey) -> None:
        del self._parked[key]
        self._any_event.discard(key)
        queued = self._pods.get(key)
        if queued is not None:
            queued.ticket = next(self._tickets)
            entry = (queued.backoff_until, queued.seq, queued.ticket, queued.key)
            heapq.heappush(self._backoff, entry)

    def _activate(self, queued: QueuedPod) -> None:
        queued.ticket = next(self._tickets)
        entry = (-queued.priority, queued.timestamp, queued.seq, queued.ticket, queued.key)
        heapq.heappush(self._active, entry)

    def _flush(self) -> None:
        now = self._clock.now()
        if self._max_unschedulable is not None:
            while self._parked:  # in the order they were parked
                key, parked = next(iter(self._parked.items()))
                if parked + self._max_unschedulable > now:  # as next_ready computes it
                    break
                self._unpark(key)
        while self._backoff and self._backoff[0][0] <= now:
            _, _, ticket, key = heapq.heappop(self._backoff)
            queued = self._pods.get(key)
            if queued is not None and queued.ticket == ticket:
                self._activate(queued)
