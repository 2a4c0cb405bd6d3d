"""One gang's plan: the node of each member, which members took which slot, and where the
members stand at the bind barrier.

The planner (extender/gangs/planner.py) makes and keeps plans; the bind barrier
(extender/gangs/barrier.py) records arrivals in them and opens them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from extender.cluster.model import PodKey
from extender.cluster.source import BindError
from extender.gangs.identity import Gang
from extender.podview import PodView


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

    def slot_of(self, pod: PodKey) -> int | None:
        index = self.assigned.get(pod)
        if index is None:
            taken = set(self.assigned.values())
            index = next((i for i in range(len(self.slots)) if i not in taken), None)
            if index is not None:
                self.assigned[pod] = index
        return index

    def fail_waiting(self, reason: str) -> None:
        for waiter in self.waiting.values():
            if not waiter.done():
                waiter.set_exception(BindError(reason))

    def describe(self) -> str:
        nodes = len(set(self.slots))
        return f"plan: {len(self.slots)} pods on {nodes} nodes in {self.domain}"
