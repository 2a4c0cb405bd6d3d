"""The bind barrier: the members of a gang bind all together or not at all.

kube-scheduler binds one pod per request, each in its own goroutine, so a member's bind call
waits here until every member of the gang reached bind; then all of them go on and bind. When
that does not happen within the barrier timeout (below kube-scheduler's 5 s extender
httpTimeout, pkg/scheduler/extender.go) every waiting bind fails, the plan is dropped, and the
pods go back to kube-scheduler's queue to be planned again.
"""

from __future__ import annotations

import asyncio
import logging

from extender.cluster.model import Cluster, PodKey
from extender.cluster.source import BindError
from extender.gangs.identity import Gang
from extender.gangs.planner import Plan, Planner

log = logging.getLogger("kube_rdma.extender")


class Barrier:
    def __init__(self, planner: Planner, cluster: Cluster, timeout: float) -> None:
        self._planner = planner
        self._cluster = cluster
        self._timeout = timeout

    async def wait(self, pod: PodKey, gang: Gang, node: str, planned: bool = True) -> None:
        """Wait until every member of the gang reached bind; raises BindError for this member
        (and all the waiting ones) when that does not happen within the timeout.

        `planned` is False for members without GPU or RDMA requests (an MPI launcher): they
        hold no slot but still count as arriving. A pod past the gang's size, or arriving when
        enough members are bound, binds without waiting."""
        if self._planner.complete(gang):
            return
        plan = self._planner.plans.get(gang.key)
        if plan is None:
            raise BindError(f"gang {gang} has no plan for this pod (it expired?); it is retried")
        if planned:
            if plan.slot_of(pod) is None:
                return  # more pods than the gang needs: this one is not waited for
            expected = plan.slots[plan.assigned[pod]]
            if expected != node:
                raise BindError(f"gang {gang} planned this pod on {expected}, not {node}")
        waiter = self._arrive(plan, pod)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self._timeout)
        except TimeoutError:
            if waiter.done():  # another member's timeout failed every waiting member already
                waiter.result()
            raise self._give_up(plan) from None

    def _arrive(self, plan: Plan, pod: PodKey) -> asyncio.Future[None]:
        """The member's wait; the last member to arrive opens the barrier for all."""
        waiter = plan.waiting.get(pod)
        if waiter is None or waiter.done():
            waiter = plan.waiting[pod] = asyncio.get_running_loop().create_future()
        self._planner.touch(plan)
        if len(self._arrived(plan)) >= plan.gang.size:
            for w in plan.waiting.values():
                if not w.done():
                    w.set_result(None)
        return waiter

    def _give_up(self, plan: Plan) -> BindError:
        """Fail every waiting member and drop the plan."""
        gang = plan.gang
        reason = (
            f"gang {gang}: {len(self._arrived(plan))} of {gang.size} members reached bind "
            f"within {self._timeout:g}s; none is bound, the gang is planned again"
        )
        log.warning(reason, extra={"gang": str(gang)})
        plan.fail_waiting(reason)
        if self._planner.plans.get(gang.key) is plan:
            self._planner.drop(gang.key)
        return BindError(reason)

    def _arrived(self, plan: Plan) -> set[PodKey]:
        """Members waiting whose pods still exist unbound, and members bound: a deleted or
        recreated pod's wait does not count."""
        waiting = set()
        for key, waiter in plan.waiting.items():
            pod = self._cluster.pod(*key)
            if waiter.done() or pod is None or (pod.get("spec") or {}).get("nodeName"):
                continue
            waiting.add(key)
        return waiting | set(self._planner.bound_of(plan.gang))
