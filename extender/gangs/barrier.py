"""The bind barrier: the members of a gang bind all together or not at all, however many.

kube-scheduler binds one pod per request, each in its own goroutine, and gives up on a request
after the extender's httpTimeout (5 s, pkg/scheduler/extender.go). It schedules one pod per
cycle, so a gang of hundreds of members reaches bind over longer than that: a barrier that
lives only as long as one request never sees the whole gang. Here a member's arrival outlives
its request:

- a member's bind request waits up to the barrier timeout (below httpTimeout); if the gang is
  still incomplete then, the request fails, but the member stays arrived (with the pod uid and
  node kube-scheduler asked for) and keeps its planned slot; kube-scheduler retries it;
- the gang makes progress while new members keep arriving: once none has arrived for the
  progress timeout, it is given up (the waiting requests fail, the plan and its arrivals are
  dropped, and the gang is planned again);
- when the last member arrives the barrier opens: the members whose requests wait bind in
  their requests, and the extender binds the members whose requests have returned itself,
  with the uid and node they arrived with. kube-scheduler's informer then shows them bound and
  its queue drops them, as for pods another binder bound.

The barrier opens only once every arrived member's DRA devices are ready (their binding
conditions, extender/gangs/readiness.py); a member whose device failed gives the gang up.

Nothing is bound before every member arrived; after, a gang is partly bound only for as long
as the apiserver takes to bind it.

A gang kube-scheduler holds itself (its GangScheduling plugin keeps members at Permit until
minCount of them are placed, 1.35 and 1.36, or places the group in one PodGroup cycle, 1.37,
then lets them bind: `Gang.held`) passes straight through: a second barrier could only slow
it, and its members never all reach bind when kube-scheduler lets fewer than all of them go.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from extender.cluster.model import Cluster
from extender.cluster.pods import PodKey
from extender.cluster.source import BindError
from extender.gangs.identity import Gang
from extender.gangs.plan import Arrival, Plan
from extender.gangs.planner import Planner
from extender.gangs.readiness import members_ready
from kube_rdma.core.dra.binding import Readiness

log = logging.getLogger("kube_rdma.extender")

BindMember = Callable[[PodKey, str, str], Awaitable[None]]
"""Binds a member (pod, uid, node) whose own request has returned; raises BindError."""

BINDS_AT_ONCE = 16
"""Binds the extender posts at once when a barrier opens, so that none waits long enough for
a connection to run out of its apiserver deadline."""


class Barrier:
    def __init__(
        self, planner: Planner, cluster: Cluster, timeout: float, bind: BindMember
    ) -> None:
        self._planner = planner
        self._cluster = cluster
        self._timeout = timeout
        self._bind = bind
        self._binding: dict[PodKey, asyncio.Task[bool]] = {}
        """Members the extender binds itself, since their requests had returned."""
        self._closed: str | None = None

    async def wait(
        self, pod: PodKey, uid: str, gang: Gang, node: str, planned: bool = True
    ) -> bool:
        """Wait until every member of the gang reached bind. True: the caller binds the member
        now; False: the extender has just bound it. Raises BindError when this request must
        fail: the gang is still incomplete after the timeout, or was given up.

        `planned` is False for members without GPU or RDMA requests (an MPI launcher): they
        hold no slot but still count as arriving. A pod past the gang's size, or arriving when
        enough members are bound, binds without waiting."""
        if self._closed is not None:
            raise BindError(self._closed)
        if gang.held:
            return True
        binding = self._binding.get(pod)
        if binding is not None and await asyncio.shield(binding):
            return False
        if self._planner.complete(gang):
            return True
        plan = self._planner.plans.get(gang.key)
        if plan is None:
            raise BindError(f"gang {gang} has no plan for this pod (it expired?); it is retried")
        if planned:
            if plan.slot_of(pod) is None:
                return True  # more pods than the gang needs: this one is not waited for
            expected = plan.slots[plan.assigned[pod]]
            if expected != node:
                raise BindError(f"gang {gang} planned this pod on {expected}, not {node}")
        if plan.opened:
            return True
        waiter = self._arrive(plan, pod, Arrival(uid, node))
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self._timeout)
        except TimeoutError:
            if waiter.done():  # opened, or failed, as the timeout struck
                waiter.result()
                return True
            raise self._timed_out(plan, pod, waiter) from None
        return True

    def close(self, reason: str) -> None:
        """Fail every waiting bind now, and every bind from now on: the extender stops."""
        self._closed = reason
        for plan in self._planner.plans.values():
            plan.fail_waiting(reason)

    async def drain(self) -> None:
        """Wait for the binds the extender is making itself."""
        await asyncio.gather(*self._binding.values(), return_exceptions=True)

    def _arrive(self, plan: Plan, pod: PodKey, arrival: Arrival) -> asyncio.Future[None]:
        """The member's wait; the last member to arrive opens the barrier for all."""
        self._planner.touch(plan)
        if pod not in plan.arrivals:
            plan.last_arrival = plan.progress
        plan.arrivals[pod] = arrival
        waiter = plan.waiting.get(pod)
        if waiter is None or waiter.done():
            waiter = plan.waiting[pod] = asyncio.get_running_loop().create_future()
        arrived = self._arrived(plan)
        if len(arrived) >= plan.gang.size:
            self._open_when_ready(plan, arrived)
        return waiter

    def _open_when_ready(self, plan: Plan, arrived: set[PodKey]) -> None:
        """Open once the members' devices are ready; give the gang up when one failed. Not
        ready: the gang stays at the barrier, and each retried bind looks again."""
        verdict = members_ready(self._cluster, arrived)
        if verdict.readiness is Readiness.READY:
            self._open(plan, arrived)
            return
        reason = f"gang {plan.gang}: every member reached bind, but {verdict.reason}"
        if verdict.readiness is Readiness.FAILED:
            reason += "; the gang is planned again"
            log.warning(reason, extra={"gang": str(plan.gang)})
            plan.fail_waiting(reason)
            if self._planner.plans.get(plan.gang.key) is plan:
                self._planner.drop(plan.gang.key, reason)
            return
        log.info(reason, extra={"gang": str(plan.gang)})

    def _open(self, plan: Plan, arrived: set[PodKey]) -> None:
        """Let the waiting requests bind; bind the members whose requests returned."""
        plan.opened = True
        log.info("gang %s: every member reached bind", plan.gang, extra={"gang": str(plan.gang)})
        limit = asyncio.Semaphore(BINDS_AT_ONCE)
        for key in arrived:
            waiter = plan.waiting.get(key)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            elif key in plan.arrivals and key not in self._binding:
                task = asyncio.create_task(self._bind_returned(key, plan.arrivals[key], limit))
                self._binding[key] = task
                task.add_done_callback(functools.partial(self._forget, key))

    async def _bind_returned(self, pod: PodKey, arrival: Arrival, limit: asyncio.Semaphore) -> bool:
        """Bind a member whose request returned; whether it is bound (else it is retried)."""
        async with limit:
            try:
                await self._bind(pod, arrival.uid, arrival.node)
            except BindError as e:
                log.warning("bind of %s/%s after its gang arrived failed: %s", *pod, e)
                return False
            except Exception:
                log.exception("bind of %s/%s after its gang arrived failed", *pod)
                return False
        return True

    def _forget(self, pod: PodKey, task: asyncio.Task[bool]) -> None:
        if self._binding.get(pod) is task:
            del self._binding[pod]

    def _timed_out(self, plan: Plan, pod: PodKey, waiter: asyncio.Future[None]) -> BindError:
        """This request fails; the member keeps its arrival unless the gang stalled."""
        if plan.waiting.get(pod) is waiter:
            del plan.waiting[pod]
        reason = self._planner.stalled(plan)
        if reason is not None:
            log.warning(reason, extra={"gang": str(plan.gang)})
            plan.fail_waiting(reason)
            if self._planner.plans.get(plan.gang.key) is plan:
                self._planner.drop(plan.gang.key, reason)
            return BindError(reason)
        arrived = self._arrived(plan)
        if len(arrived) >= plan.gang.size:
            verdict = members_ready(self._cluster, arrived)
            return BindError(
                f"gang {plan.gang}: every member reached bind, but {verdict.reason}; this one "
                "keeps its place and is bound once the devices are ready"
            )
        return BindError(
            f"gang {plan.gang}: {len(arrived)} of {plan.gang.size} members reached "
            f"bind so far; this one keeps its place and is bound when the last arrives"
        )

    def _arrived(self, plan: Plan) -> set[PodKey]:
        """Members arrived whose pods still exist unbound, the same pods (uid) they arrived
        as, and members bound: a deleted or recreated pod's arrival does not count."""
        arrived = set()
        for key, arrival in plan.arrivals.items():
            pod = self._cluster.pod(*key)
            if pod is None or (pod.get("spec") or {}).get("nodeName"):
                continue
            uid = (pod.get("metadata") or {}).get("uid")
            if arrival.uid and uid and uid != arrival.uid:
                continue
            arrived.add(key)
        return arrived | set(self._planner.bound_of(plan.gang))
