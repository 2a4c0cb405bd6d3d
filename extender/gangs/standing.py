"""Whether a gang's plan still stands: it expires without progress, it is given up when its
members stop arriving at the bind barrier, and it is redone when a planned node no longer
fits a member or no longer admits the members planned there (a cordon, a taint, a label
changed since). Members bound, or whose claims kube-scheduler allocated on their planned node,
are settled: their slots are not judged again.
"""

from __future__ import annotations

from collections.abc import Callable

from extender.cluster.claims import claim_names
from extender.cluster.model import Cluster
from extender.cluster.pods import PodKey
from extender.engine import Engine
from extender.gangs.plan import Plan
from extender.gangs.settings import GangSettings


class Standing:
    def __init__(
        self,
        cluster: Cluster,
        engine: Engine,
        settings: GangSettings,
        clock: Callable[[], float],
    ) -> None:
        self._cluster = cluster
        self._engine = engine
        self._settings = settings
        self._clock = clock

    def stalled(self, plan: Plan) -> str | None:
        """Why the gang is given up at the bind barrier: members arrived, but no new one for
        the progress timeout; None while it progresses (or has no member there yet)."""
        window = self._settings.barrier_progress_timeout
        if plan.opened or plan.last_arrival is None or self._clock() - plan.last_arrival <= window:
            return None
        return (
            f"gang {plan.gang}: {len(plan.arrivals)} of {plan.gang.size} members reached bind, "
            f"none new for {window:g}s; none is bound, the gang is planned again"
        )

    def expired(self, plan: Plan) -> str | None:
        if self._clock() - plan.progress > self._settings.plan_timeout:
            return f"the plan of gang {plan.gang} expired without progress"
        return self.stalled(plan)

    def still_fits(self, plan: Plan) -> bool:
        settled = {
            i
            for key, i in plan.assigned.items()
            if self.bound(key) or self._claimed_on(key, plan.slots[i])
        }
        open_slots = [i for i in range(len(plan.slots)) if i not in settled]
        for node in {plan.slots[i] for i in open_slots}:
            info = self._cluster.node(node)
            if info is None or not self._engine.verdict(plan.member, node, plan.gang.key).ok:
                return False
        return self._still_admitted(plan, open_slots)

    def _still_admitted(self, plan: Plan, open_slots: list[int]) -> bool:
        """The open slots' nodes still admit the members planned there (no cordon, taint or
        label change since)."""
        judged = set()
        for i in open_slots:
            constraints = plan.constraints[i] if i < len(plan.constraints) else None
            if constraints is None or (plan.slots[i], id(constraints)) in judged:
                continue
            judged.add((plan.slots[i], id(constraints)))
            info = self._cluster.node(plan.slots[i])
            if info is not None and constraints.refusal(info) is not None:
                return False
        return True

    def _claimed_on(self, key: PodKey, node: str) -> bool:
        """The member's resource claims are allocated on `node`: kube-scheduler's
        DynamicResources plugin took its devices there (Reserve, PreBind) before calling the
        extender's bind, so the devices the node now lacks are the member's own."""
        pod = self._cluster.pod(*key)
        if pod is None or not (pod.get("spec") or {}).get("resourceClaims"):
            return False
        # Dictionary lookups only: this runs for every planned member at each member's filter.
        dra = self._cluster.dra
        nodes = {
            dra.claim_node((key[0], name))
            for name in claim_names(pod, self._cluster.native.claims_of(pod))[0]
        }
        return nodes - {None} == {node}

    def bound(self, key: PodKey) -> bool:
        pod = self._cluster.pod(*key)
        return bool(pod and (pod.get("spec") or {}).get("nodeName"))
