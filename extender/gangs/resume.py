"""Taking over the gangs in flight from their records (extender/book/records.py) and the pods.

When this process starts serving after another one served (a takeover, a restart), what it may
hold in memory is stale and what the records say is current. It forgets its own plans (their
waiting binds fail and are retried) and adopts every record: the plan's slots and domain as
recorded, its slice size and the member group each slot is for, each bound member in a slot of
its node (of its group and its rank's slice, where the record has them), the capacity of the
other slots held again. So the gang is finished on the nodes it was planned on: nothing is
booked twice, a gang the previous process had begun to bind is completed rather than planned
anew, slice k's ranks still go to slice k's domain, and a member pinned to a pool still gets a
slot in it. A record whose gang has no pod left is removed, and so is one whose gang is bound
whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

from extender.book.records import PlanRecord
from extender.book.reservations import GangKey
from extender.cluster.pods import PodKey
from extender.gangs.identity import Gang
from extender.gangs.plan import Plan
from extender.gangs.planner import Planner
from extender.podview import PodView
from kube_rdma.core.nodeconstraints import NodeConstraints

log = logging.getLogger("kube_rdma.extender")


@dataclass
class Members:
    """What the cluster shows of one gang: a member to plan for, and the members bound."""

    gang: Gang
    member: PodView
    bound: dict[PodKey, str] = field(default_factory=dict)


def resume(
    planner: Planner,
    saved: Mapping[GangKey, PlanRecord],
    members: Mapping[GangKey, Members],
    reason: str,
) -> None:
    """Replace the planner's plans with the recorded ones; binds waiting fail with `reason`."""
    for key in list(planner.plans):
        planner.forget(key, reason)
    planner.bound_members.clear()
    for key, record in saved.items():
        found = members.get(key)
        if found is None:
            planner.records.remove(key)
            continue
        planner.adopt(rebuilt(record, found, planner.member_hint), found.bound)
        if planner.complete(found.gang):
            planner.drop(key)
    log.info("took over %d gang plans from their records", len(planner.plans))


Hint = Callable[[Plan, PodKey], tuple[Hashable | None, int | None]]
"""A member's group (None: any) and rank (None: unknown), as the planner reads them."""


def rebuilt(
    record: PlanRecord, members: Members, hint: Hint = lambda plan, pod: (None, None)
) -> Plan:
    """The recorded plan, each bound member in a slot of its node: of its group and its
    rank's slice first, any of the node's otherwise."""
    plan = Plan(members.gang, members.member, list(record.slots), record.domain, 0.0, 0.0)
    plan.slice_size = record.slice_size
    compiled = [NodeConstraints.of({"spec": spec}) for spec in record.groups]
    plan.constraints = [compiled[i] if i is not None else None for i in record.slot_groups]
    plan.group_specs = {c.key: spec for c, spec in zip(compiled, record.groups, strict=True)}
    for pod, node in members.bound.items():
        group, rank = hint(plan, pod)
        if plan.slot_of(pod, group, rank, node) is None:
            plan.slot_of(pod, node=node)
    return plan
