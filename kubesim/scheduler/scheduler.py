"""kube-scheduler with one profile and at most one HTTP extender, over a Kubernetes apiserver.

It plays kube-scheduler's side of the extender protocol as kube-scheduler really plays it, not as
the extender would like it: one pod at a time from a queue with per-pod backoff, the in-tree fit,
only a sample of the feasible nodes sent to /filter, /prioritize scores added as
`score x weight x 10`, the pod *assumed* on its node while an asynchronous binding cycle runs (so
the next pods are scheduled while a bind is held), and a failed bind forgotten and retried.

Where it follows kube-scheduler (pkg/scheduler/schedule_one.go): the scheduling cycle (pick a
node, assume the pod on it) and the binding cycle run alongside; a pod that fails either is backed
off, unless a bind that failed left it bound anyway (handleSchedulingFailure). The scheduler's
informers, cache and queue are the other modules of this package.

A pod that fits nowhere goes through PostFilter, kube-scheduler's DefaultPreemption
(kubesim/scheduler/preemptor.py), unless the configuration turns preemption off.

With `gang_scheduling` it runs the GangScheduling plugin's PreEnqueue and Permit
(kubesim/scheduler/gangscheduling.py), and with `pod_group_cycle` a pod that names a PodGroup
is scheduled with its group in one PodGroup scheduling cycle (kubesim/scheduler/podgroupcycle.py).

Where it simplifies, and a careful reader could tell: no other PreFilter/Permit plugins.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Mapping

from kube_rdma.core.objects import Json
from kubesim.scheduler.attempt import Attempt, Connections
from kubesim.scheduler.binder import Binder, BindOutcome
from kubesim.scheduler.cache import SchedulerCache
from kubesim.scheduler.clock import Clock, RealClock
from kubesim.scheduler.config import SchedulerConfig
from kubesim.scheduler.dynamicresources import DynamicResources, both
from kubesim.scheduler.extender_client import ExtenderClient, ExtenderError
from kubesim.scheduler.gangscheduling import GangScheduling
from kubesim.scheduler.informer import Informer
from kubesim.scheduler.job_controller import JobRunner
from kubesim.scheduler.links import HttpLinks, Links
from kubesim.scheduler.placement import Placement, Unschedulable
from kubesim.scheduler.podgroupcycle import schedule_group
from kubesim.scheduler.pods import (
    DEFAULT_SCHEDULER,
    TERMINAL,
    PodKey,
    bound_node,
    pod_key,
)
from kubesim.scheduler.preemptor import Preemptor
from kubesim.scheduler.queue import QueuedPod, SchedulingQueue
from kubesim.scheduler.recorder import GangOf, Recorder, gang_of
from kubesim.scheduler.workload import JobStream

ROUNDING = 1e-6
"""Seconds an idle wait goes past the next timer."""


class EmulatedScheduler:
    """Use as `async with`: it lists and watches the apiserver while open: the one at URL
    `apiserver` with the extender at `extender_url`, or those `apiserver` links to when it is
    `Links`. `step()` runs one scheduling cycle (after creating the workload's due pods and
    deleting its finished ones); binding cycles run as tasks alongside, as kube-scheduler's
    binding goroutines do. Without an extender (and `use_extender` off) it is a plain
    kube-scheduler. `gangs` tells the recorder which gang a pod belongs to (kube-rdma's
    annotations by default)."""

    def __init__(
        self,
        apiserver: str | Links,
        extender_url: str | None,
        config: SchedulerConfig | None = None,
        clock: Clock | None = None,
        *,
        workload: JobStream | None = None,
        gangs: GangOf = gang_of,
    ) -> None:
        self.config = config or SchedulerConfig()
        self.clock: Clock = clock or RealClock()
        if isinstance(apiserver, str):
            url = extender_url if self.config.use_extender else None
            apiserver = HttpLinks(apiserver, url, self.config.http_timeout)
        elif extender_url is not None:
            raise ValueError("links name their own extender: extender_url must be None")
        if self.config.use_extender and not apiserver.extender_name:
            raise ValueError("use_extender needs an extender")
        self._links = apiserver
        self.extender_url = apiserver.extender_name if self.config.use_extender else None
        self.queue = SchedulingQueue(
            self.clock,
            self.config.backoff_initial,
            self.config.backoff_max,
            self.config.max_unschedulable,
        )
        self.cache = cache = SchedulerCache()
        self.usage, self.nodes, self.assumed = cache.usage, cache.nodes, cache.assumed
        self.nominations = cache.nominations
        self.attempts: list[Attempt] = []
        self.binds: list[BindOutcome] = []
        self.recorder = Recorder(self.clock, cache.labels, gangs)
        self.jobs = JobRunner(workload) if workload is not None else None
        self.placement = Placement(
            self.config, self.nodes, cache.tree, self.usage, self.clock, self.nominations
        )
        by_node = cache.pods_by_node(lambda: self.informer.pods())
        self._preemptor = Preemptor(
            self.config, self.nodes, self.usage, self.nominations, by_node, cache.lowest_priority
        )
        self.in_flight: dict[PodKey, QueuedPod] = {}
        self.gangs = (
            GangScheduling(self.clock, self._is_scheduled, self.config.permit_timeout)
            if self.config.gang_scheduling
            else None
        )
        self._dra: DynamicResources | None = None
        """kube-scheduler's DynamicResources plugin, where the apiserver serves DRA."""
        self._bindings: set[asyncio.Task[None]] = set()
        self._crashes: list[BaseException] = []
        self._connections: Connections | None = None
        self._activity = asyncio.Event()
        """Set whenever the informer shows a change or a binding cycle ends: what an idle
        `run_until` waits for besides its next timer."""

    # Lifecycle

    async def __aenter__(self) -> EmulatedScheduler:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        exits = contextlib.AsyncExitStack()
        apiserver, post = await self._links.open(exits)
        informer = Informer(apiserver, self._node_changed, self._pod_changed)
        extender = None
        if self.extender_url is not None and post is not None:
            extender = ExtenderClient(self.extender_url, self.config, post, informer.node)
        binds_by_extender = extender if self.config.bind_via_extender else None
        binder = Binder(apiserver, binds_by_extender, self.clock)
        calls = apiserver.dra()
        self._dra = DynamicResources(calls) if calls is not None else None
        self._connections = Connections(exits, apiserver, informer, extender, binder)
        await informer.start()
        if self.jobs is not None:
            self.jobs.begin(self.clock.now())

    async def close(self) -> None:
        for task in list(self._bindings):
            task.cancel()
        await asyncio.gather(*self._bindings, return_exceptions=True)
        if self._connections is not None:
            await self._connections.informer.stop()
            await self._connections.exits.aclose()

    @property
    def connections(self) -> Connections:
        if self._connections is None:
            raise RuntimeError("the emulated scheduler is not started")
        return self._connections

    @property
    def informer(self) -> Informer:
        return self.connections.informer

    # Driving

    async def step(self) -> Attempt | None:
        """One scheduling cycle for the next ready pod; None when no pod is ready. Raises what
        a binding cycle or a watch crashed of: a bug in the emulator must not look like a stall."""
        self._activity.clear()
        await asyncio.sleep(0)  # let the watches and binding cycles run between cycles
        crash = self._crashes[0] if self._crashes else self.informer.crash()
        if crash is not None:
            raise crash
        if self.jobs is not None:
            await self._run_jobs(self.clock.now())
        queued = self.queue.pop()
        if queued is None:
            return None
        attempt = await self._schedule(queued)
        self.attempts.append(attempt)
        return attempt

    async def run_until(
        self,
        predicate: Callable[[], bool],
        timeout: float,  # noqa: ASYNC109 - clock seconds (a ManualClock's), not the loop's
    ) -> bool:
        """Step until `predicate()` holds (True) or `timeout` seconds have passed (False)."""
        deadline = self.clock.now() + timeout
        while not predicate():
            now = self.clock.now()
            if now >= deadline:
                return False
            if await self.step() is None:
                await self.clock.wait(self._activity, min(self._idle(now), deadline - now))
        return True

    def workload_done(self) -> bool:
        """Every job of the workload was created, ran and was deleted."""
        return self.jobs is not None and self.jobs.done

    def _idle(self, now: float) -> float:
        wakes = [self.queue.next_ready()]
        if self.jobs is not None:
            wakes.append(self.jobs.next_event())
        soonest = min((w for w in wakes if w is not None), default=math.inf)
        # A microsecond past it: a clock adding the wait to its time must not land a rounding
        # error short of the deadline, and find nothing due.
        return max(0.0, min(self.config.idle_poll, soonest - now + ROUNDING))

    async def _run_jobs(self, now: float) -> None:
        """What the Job controller does (kubesim/scheduler/job_controller.py)."""
        assert self.jobs is not None
        apiserver, name = self.connections.apiserver, self.config.scheduler_name
        await self.jobs.act(apiserver, now, name, self.pod_group_changed)

    # The informer's events

    def _node_changed(self, old: Json | None, new: Json | None) -> None:
        self._activity.set()
        if new is not None:
            self.queue.move_all()
        self.cache.node_changed(old, new)

    def _pod_changed(self, old: Json | None, new: Json | None) -> None:
        self._activity.set()
        obj = new if new is not None else old
        assert obj is not None
        key = pod_key(obj)
        if new is None:
            self.queue.move_all()  # its resources are free: parked pods may fit now
        elif bound_node(new):
            self.queue.move_any_event()
        self.cache.pod_changed(key, new, new is not None and self.schedulable(new))
        released = self.gangs.pod_changed(key, old, new) if self.gangs is not None else []
        if new is not None and self.schedulable(new):
            if key not in self.in_flight and key not in self.assumed:
                self._enqueue(key, new)
        else:
            self.queue.remove(key)
        self._enqueue_all(released)
        self.recorder.pod_changed(old, new)
        if self.jobs is not None:
            self.jobs.pod_changed(key, old, new, self.clock.now())

    def pod_group_changed(self, old: Json | None, new: Json | None) -> None:
        """A PodGroup added, updated or deleted (ignored without `gang_scheduling`)."""
        if self.gangs is not None:
            self._activity.set()
            self._enqueue_all(self.gangs.pod_group_changed(old, new))

    def _enqueue(self, key: PodKey, pod: Json) -> None:
        """Into the queue, unless a PreEnqueue plugin holds it."""
        if self.gangs is None or self.gangs.pre_enqueue(key, pod) is None:
            self.queue.add(key, int((pod.get("spec") or {}).get("priority") or 0))

    def _enqueue_all(self, keys: list[PodKey]) -> None:
        for key in keys:
            pod = self.informer.pod(key)
            if pod is not None and self.schedulable(pod) and key not in self.assumed:
                self._enqueue(key, pod)

    def _is_scheduled(self, key: PodKey) -> bool:
        pod = self.informer.pod(key)
        return key in self.assumed or (pod is not None and bound_node(pod) is not None)

    def schedulable(self, pod: Json) -> bool:
        spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
        return (
            (spec.get("schedulerName") or DEFAULT_SCHEDULER) == self.config.scheduler_name
            and not spec.get("nodeName")
            and (pod.get("status") or {}).get("phase") not in TERMINAL
            and not meta.get("deletionTimestamp")
        )

    def account(self, key: PodKey) -> None:
        self.cache.account(key, self.informer.pod(key))

    # The scheduling cycle

    async def _schedule(self, queued: QueuedPod) -> Attempt:
        key, now = queued.key, self.clock.now()
        pod = self.informer.pod(key)
        if pod is None or not self.schedulable(pod):
            return Attempt(key, now, "gone")
        dra = self._dra if self._dra is not None and self._dra.wants(pod) else None
        group = self.gangs.group_of(pod) if self.gangs is not None else None
        if group is not None and dra is None and self.config.pod_group_cycle:
            first, *others = await schedule_group(self, queued, group)
            self.attempts.extend(others)
            return first
        self.in_flight[key] = queued
        try:
            claims = None
            if dra is not None:
                await dra.refresh()
                pod = await dra.claims_made(pod, self.connections.apiserver.patch_pod_status)
                claims = dra.checker(pod)
            deferred: frozenset[str] = frozenset()
            if self._dra is not None and (asked := await self._dra.served(pod)):
                deferred = frozenset(asked)
                extended = self._dra.extended_checker(asked, self._allocatable, self.usage.of)
                claims = extended if claims is None else both(claims, extended)
            extender = self.extender_for(pod)
            node, sampled = await self.placement.find_node(pod, extender, claims, deferred)
        except ExtenderError as e:
            del self.in_flight[key]
            self.requeue(queued)
            return Attempt(key, now, "error", message=str(e))
        except Unschedulable as e:
            preemption = await self._preemptor.post_filter(
                pod, e, self.connections.apiserver, self.extender_for(pod)
            )
            del self.in_flight[key]
            # The victims' deletions came during the cycle: kube-scheduler replays such
            # in-flight events when it requeues the pod, which backs off instead of parking.
            self.requeue(queued, parked=not preemption.victims, any_event=e.by_extender)
            message = str(e) if not preemption.message else f"{e} preemption: {preemption.message}"
            return Attempt(
                key, now, "unschedulable", None, message, 0, preemption.node, preemption.victims
            )
        current = self.informer.pod(key)
        if current is None or not self.schedulable(current):
            del self.in_flight[key]
            return Attempt(key, now, "gone", node, "the pod changed during its scheduling cycle")
        # assume: the pod counts on its node from now on, while the bind runs in the background
        self.assumed[key] = node
        if dra is not None:
            dra.reserve(current, node)
        self.account(key)
        self.start_binding(queued, current, node)
        return Attempt(key, now, "assumed", node, sampled=sampled)

    def start_binding(self, queued: QueuedPod, pod: Json, node: str) -> None:
        """The binding cycle of a pod assumed on `node`, in the background."""
        task = asyncio.create_task(self._bind(queued, pod, node))
        self._bindings.add(task)
        task.add_done_callback(self._binding_done)

    def _allocatable(self, node: str) -> Mapping[str, int]:
        facts = self.nodes.get(node)
        return facts.allocatable if facts is not None else {}

    def extender_for(self, pod: Json) -> ExtenderClient | None:
        extender = self.connections.extender
        return extender if extender is not None and extender.interested(pod) else None

    def requeue(self, queued: QueuedPod, parked: bool = False, any_event: bool = False) -> None:
        """Back off (`parked`: as unschedulable, moved by `any_event` or not), unless the pod is
        gone or bound meanwhile (a bind that timed out may have happened all the same)."""
        pod = self.informer.pod(queued.key)
        if pod is None or not self.schedulable(pod) or queued.key in self.assumed:
            return
        if parked:
            self.queue.park(queued, any_event)
        else:
            self.queue.back_off(queued)

    # The binding cycle

    def _binding_done(self, task: asyncio.Task[None]) -> None:
        self._activity.set()
        self._bindings.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self._crashes.append(error)

    async def _bind(self, queued: QueuedPod, pod: Json, node: str) -> None:
        key = queued.key
        if self.gangs is not None and (
            rejected := await self.gangs.permit(key, pod, self.queue.activate)
        ):
            self.in_flight.pop(key, None)
            self.assumed.pop(key, None)  # unreserved and forgotten
            self.account(key)
            self.attempts.append(Attempt(key, self.clock.now(), "unschedulable", message=rejected))
            self.requeue(queued, parked=True)
            return
        dra = self._dra if self._dra is not None and self._dra.wants(pod) else None
        if dra is not None:
            await dra.prebind(pod, node)
        outcome = await self.connections.binder.bind(pod, node)
        if dra is not None and outcome.error:
            await dra.unreserve(pod)
        if dra is not None:
            dra.done(pod)
        self.binds.append(outcome)
        self.in_flight.pop(key, None)
        current = self.informer.pod(key)
        if outcome.error or current is None or bound_node(current) is not None:
            self.assumed.pop(key, None)  # forgotten, or confirmed by the informer already
            self.account(key)
        if outcome.error:
            self.requeue(queued)
