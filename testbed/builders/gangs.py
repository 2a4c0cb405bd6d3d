"""Gangs for the extender's tests: a small shared cluster with a snapshot-mode Scheduler over it,
for contention (holds, preemption, quorum), and a gang bound whole, for `explain`.

The cluster: six HGX nodes, a0-a3 under leaf-a and b0-b1 under leaf-b; pods of a priority,
running on a node or pending; gang members by kube-rdma's annotations; a Scheduler with the
default weights and the contention settings given, its clock a Clock the test moves."""

from __future__ import annotations

from typing import Any

from extender.cluster.disruptions import ModelDisruptions
from extender.cluster.snapshot import SnapshotSource
from extender.gangs.planner import GangSettings
from extender.preemption.contention import ContentionSettings
from extender.scheduling import Scheduler
from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes

LEAF = keys.LEAF
NAMES = ["a0", "a1", "a2", "a3", "b0", "b1"]


class Clock:
    """A clock that stands still until a test moves `now`."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cluster() -> list[Json]:
    return [nodes.node(f"a{i}", nodes.hgx(), labels={LEAF: "leaf-a"}) for i in range(4)] + [
        nodes.node(f"b{i}", nodes.hgx(), labels={LEAF: "leaf-b"}) for i in range(2)
    ]


def pod(name: str, priority: int = 0, node: str | None = None, **extra: Any) -> Json:
    found = nodes.pod(name, node_name=node, phase="Running" if node else "Pending", **extra)
    if priority:
        found["spec"]["priority"] = priority
    return found


def member(gang: str, index: int, size: int, priority: int = 0, node: str | None = None) -> Json:
    annotations = {keys.GANG: gang, keys.GANG_SIZE: str(size)}
    return pod(f"{gang}-{index}", priority, node, annotations=annotations)


def scheduler(objects: list[Json], clock: Clock, **settings: Any) -> Scheduler:
    source = SnapshotSource(objects)
    return Scheduler(
        source,
        lambda: DEFAULT,
        GangSettings(),
        ("nvidia.com/gpu",),
        ("rdma/*",),
        clock=clock,
        contention=ContentionSettings(**settings),
        disruptions=ModelDisruptions(source.cluster),
    )


def busy_everywhere(priority: int = 0) -> list[Json]:
    return [pod(f"job-{n}", priority, n) for n in NAMES]


BOUND_AT = "2026-12-05T01:02:03Z"
"""When bound_member's pods were bound (their PodScheduled condition)."""


def bound_member(index: int, node: str, scheduled: bool = True) -> Json:
    """Member `index` of team ml-training's gang finetune of 2, running on `node` under
    rdma-scheduler; `scheduled`: with its PodScheduled condition of BOUND_AT."""
    annotations = {keys.GANG: "finetune", keys.GANG_SIZE: "2"}
    found = nodes.pod(
        f"finetune-{index}",
        annotations=annotations,
        namespace="ml-training",
        node_name=node,
        phase="Running",
    )
    found["spec"]["schedulerName"] = "rdma-scheduler"
    if scheduled:
        condition = {"type": "PodScheduled", "status": "True", "lastTransitionTime": BOUND_AT}
        found["status"]["conditions"] = [{"type": "Ready", "status": "True"}, condition]
    return found
