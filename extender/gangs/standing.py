"""Whether a gang's plan still stands: it expires without progress, it is given up when its
members stop arriving at the bind barrier, and it is redone when a planned node no longer
fits a member or no longer admits the members planned there (a cordon, a taint, a label
changed since). Members bound, or whose claims kube-scheduler allocated on their planned node,
are settled: their slots are not judged again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from extender.book.reservations import GangKey, GangPlans
from extender.cluster.claims import claim_names
from extender.cluster.model import Cluster
from extender.cluster.pods import PodKey
from extender.engine import Engine
from extender.gangs.plan import Plan
from extender.gangs.settings import GangSettings


@dataclass
class _Stood:
    """A plan as it last stood: when (the cluster's changes, the book's version), the slots
    settled then, and each planned node's slots."""

    plan: Plan
    changes: int
    book: int
    settled: dict[int, PodKey]
    slots_of: dict[str, list[int]]


class Standing:
    def __init__(
        self,
        cluster: Cluster,
        engine: Engine,
        book: GangPlans,
        settings: GangSettings,
        clock: Callable[[], float],
    ) -> None:
        self._cluster = cluster
        self._engine = engine
        self._book = book
        self._settings = settings
        self._clock = clock
        self._stood: dict[GangKey, _Stood] = {}

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
        """Every open slot's node still fits a member and admits the members planned there.

        Asked at each member's filter, so a plan of thousands of slots is judged whole once and
        then only where something changed since it last stood: the nodes whose views changed
        (the cluster's change log), and the slots settled then that are open again. What other
        plans hold changing (the book's version) or a log too old to read has it judged whole
        again."""
        last = self._stood.get(plan.gang.key)
        changed = None
        if last is not None and last.plan is plan and last.book == self._book.version:
            changed = self._cluster.changed_since(last.changes)
        if last is None or changed is None:
            return self._judge_whole(plan)
        reopened = [i for i, key in last.settled.items() if not self._settled_on(plan, key, i)]
        nodes = {n for n in changed if n in last.slots_of}
        nodes.update(plan.slots[i] for i in reopened)
        if nodes:
            settled = self._settled(plan)
            open_slots = [i for n in nodes for i in last.slots_of[n] if i not in settled]
            if not self._fits(plan, open_slots):
                self._stood.pop(plan.gang.key, None)
                return False
            last.settled = settled
        last.changes = self._cluster.changes
        return True

    def forget(self, gang: GangKey) -> None:
        """The gang's plan is gone: so is how it last stood."""
        self._stood.pop(gang, None)

    def _judge_whole(self, plan: Plan) -> bool:
        settled = self._settled(plan)
        open_slots = [i for i in range(len(plan.slots)) if i not in settled]
        if not self._fits(plan, open_slots):
            self._stood.pop(plan.gang.key, None)
            return False
        slots_of: dict[str, list[int]] = {}
        for i, node in enumerate(plan.slots):
            slots_of.setdefault(node, []).append(i)
        changes, book = self._cluster.changes, self._book.version
        self._stood[plan.gang.key] = _Stood(plan, changes, book, settled, slots_of)
        return True

    def _settled(self, plan: Plan) -> dict[int, PodKey]:
        """Slot -> member, for the members bound or holding their claims on their node."""
        return {i: key for key, i in plan.assigned.items() if self._settled_on(plan, key, i)}

    def _settled_on(self, plan: Plan, key: PodKey, slot: int) -> bool:
        if plan.assigned.get(key) != slot:
            return False
        return self.bound(key) or self._claimed_on(key, plan.slots[slot])

    def _fits(self, plan: Plan, open_slots: list[int]) -> bool:
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
