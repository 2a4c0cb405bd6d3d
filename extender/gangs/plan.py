"""One gang's plan: the node of each member, which members took which slot, and where the
members stand at the bind barrier.

The planner (extender/gangs/planner.py) makes and keeps plans; the bind barrier
(extender/gangs/barrier.py) records arrivals in them and opens them; `record_of` is what a plan
writes to the API (extender/book/records.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, filterfalse

from extender.book.records import PlanRecord
from extender.cluster.pods import PodKey
from extender.cluster.source import BindError
from extender.gangs.identity import Gang
from extender.gangs.slices import span
from extender.podview import PodView
from kube_rdma.core.nodeconstraints import NodeConstraints
from kube_rdma.core.objects import Json


@dataclass(frozen=True)
class Arrival:
    """A member that reached bind: what kube-scheduler asked to bind it with. It outlives the
    bind request, which kube-scheduler's httpTimeout ends long before a big gang is complete."""

    uid: str
    node: str


@dataclass
class Plan:
    gang: Gang
    member: PodView
    """The member the plan was made for: every member is assumed to ask the same."""
    slots: list[str]
    domain: str
    created: float
    progress: float
    """When a member last made progress (filtered or reaching bind)."""
    assigned: dict[PodKey, int] = field(default_factory=dict)
    waiting: dict[PodKey, asyncio.Future[None]] = field(default_factory=dict)
    """Members whose bind requests wait at the barrier now."""
    arrivals: dict[PodKey, Arrival] = field(default_factory=dict)
    """Members that reached bind, their requests waiting or returned."""
    last_arrival: float | None = None
    """When a member reached bind for the first time, most recently."""
    opened: bool = False
    """Every member arrived: members bind from then on without waiting."""
    absent: dict[str, int] = field(default_factory=dict)
    constraints: list[NodeConstraints | None] = field(default_factory=list)
    """Per slot, the node constraints of the members it was planned for; None (or no entry)
    for a slot any member may take."""
    ruled_out: frozenset[str] = frozenset()
    """Nodes kube-scheduler ruled out for this gang: plans redone for it avoid them too."""
    slice_size: int = 0
    """Slots per slice (slice k: slots k x size to (k+1) x size - 1); 0: not sliced."""
    slice_sizes: tuple[int, ...] = ()
    """Slots of each slice in turn, where they differ (a CompositePodGroup's PodGroups)."""
    honoured: dict[PodKey, Hashable] = field(default_factory=dict)
    """The asks (extender/gangs/pools.py, `asks`) of each member the plan was made from: those
    the cache held, and the pod kube-scheduler sent when the cache lacked it. Members not in it
    were assumed to ask as the most common; one that asks otherwise has the gang planned
    again when it arrives. Empty for a plan taken over from its record."""
    group_specs: dict[Hashable, Json] = field(default_factory=dict)
    """Each group's constraints (by key) as the pod spec fields they were compiled from, for
    the plan's record (extender/book/records.py)."""
    _groups: tuple[list[NodeConstraints | None], int, frozenset[Hashable]] | None = field(
        default=None, repr=False, compare=False
    )
    _described: tuple[list[str], int, str] | None = field(default=None, repr=False, compare=False)

    @property
    def mixed(self) -> bool:
        """Slots were planned for members with different constraints."""
        return len(self.groups()) > 1

    def groups(self) -> frozenset[Hashable]:
        """The constraints' keys; the slots of one group share one object, hashed once. Asked
        at each member's filter: found once per list of constraints (and its length)."""
        seen = self._groups
        if seen is not None and seen[0] is self.constraints and seen[1] == len(seen[0]):
            return seen[2]
        distinct = {id(c): c for c in self.constraints if c is not None}
        keys = frozenset(c.key for c in distinct.values())
        self._groups = (self.constraints, len(self.constraints), keys)
        return keys

    def slot_of(
        self,
        pod: PodKey,
        group: Hashable | None = None,
        rank: int | None = None,
        node: str | None = None,
    ) -> int | None:
        """The pod's slot, assigning it the first free one planned for its `group` (any free
        one when None), on `node` when given; in a sliced plan, one of its rank's slice
        first."""
        index = self.assigned.get(pod)
        if index is None:
            taken = set(self.assigned.values())
            order: Iterable[int] = range(len(self.slots))
            spanned = None if rank is None else span(rank, self.slice_size, self.slice_sizes)
            if spanned is not None:
                first, count = spanned
                order = chain(range(first, first + count), order)
            # The slots not taken are found in C: a gang of thousands asks this per member.
            free: Iterator[int] = filterfalse(taken.__contains__, order)
            if group is not None or node is not None:
                free = (
                    i
                    for i in free
                    if self._for(i, group) and (node is None or self.slots[i] == node)
                )
            index = next(free, None)
            if index is not None:
                self.assigned[pod] = index
        return index

    def assign_among(self, pod: PodKey, nodes: Iterable[str]) -> None:
        """Give the pod the first free slot on one of `nodes`, if there is one."""
        among = set(nodes)
        taken = set(self.assigned.values())
        for index, node in enumerate(self.slots):
            if node in among and index not in taken:
                self.assigned[pod] = index
                return

    def assign_free(self, pods: Iterable[PodKey]) -> None:
        """Give each pod without a slot the next free one, in order, in one pass over the slots
        (a plan of one group, not sliced: any free slot is as good as another)."""
        taken = set(self.assigned.values())
        free: Iterator[int] = filterfalse(taken.__contains__, range(len(self.slots)))
        for pod in pods:
            if pod not in self.assigned:
                index = next(free, None)
                if index is None:
                    return
                self.assigned[pod] = index

    def _for(self, index: int, group: Hashable | None) -> bool:
        planned = self.constraints[index] if index < len(self.constraints) else None
        return group is None or planned is None or planned.key == group

    def fail_waiting(self, reason: str) -> None:
        for waiter in self.waiting.values():
            if not waiter.done():
                waiter.set_exception(BindError(reason))

    def describe(self) -> str:
        """Said in each member's filter answer: the nodes counted once per list of slots."""
        seen = self._described
        if seen is None or seen[0] is not self.slots or seen[1] != len(self.slots):
            text = f"plan: {len(self.slots)} pods on {len(set(self.slots))} nodes in {self.domain}"
            seen = self._described = (self.slots, len(self.slots), text)
        return seen[2]


def record_of(plan: Plan) -> PlanRecord:
    keys: list[Hashable] = []
    slot_groups: list[int | None] = []
    for index in range(len(plan.slots)):
        constraints = plan.constraints[index] if index < len(plan.constraints) else None
        if constraints is None or constraints.key not in plan.group_specs:
            slot_groups.append(None)
            continue
        if constraints.key not in keys:
            keys.append(constraints.key)
        slot_groups.append(keys.index(constraints.key))
    groups = tuple(plan.group_specs[k] for k in keys)
    return PlanRecord(
        plan.gang.key,
        plan.gang.size,
        plan.domain,
        tuple(plan.slots),
        slice_size=plan.slice_size,
        groups=groups,
        slot_groups=tuple(slot_groups) if groups else (),
    )
