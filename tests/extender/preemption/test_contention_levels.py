"""Holds and preemption over each gang's own levels, on an NVL72-style cluster (4 NVLink
partitions of 18 nodes x 4 GPUs; leaves of 16 nodes that do not line up with them, spines of
2 leaves): a gang that requires the NVLink domain preempts and holds inside one partition
only; one that prefers it holds a partition before any leaf; one that requires a spine never
holds or preempts wider than a spine."""

from __future__ import annotations

from collections import Counter
from typing import Any

from extender.cluster.disruptions import ModelDisruptions
from extender.cluster.snapshot import SnapshotSource
from extender.gangs.planner import GangSettings
from extender.gangs.settings import level_settings
from extender.preemption.contention import ContentionSettings
from extender.scheduling import Scheduler
from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.clustergen.vocabularies import CLUSTER_UUID, nvl72

NODES = nvl72(4, leaves_per_spine=2)
NAMES = [str(n["metadata"]["name"]) for n in NODES]
GANG = ("team-a", "urgent")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def clique_of(node: str) -> str:
    """gb-<clique>-<slot>"""
    return node.split("-")[1]


def occupant(index: int, priority: int) -> Json:
    node = NAMES[index]
    found = nodes.pod(f"job-{node}", gpus=4, rdma={"rdma/hca": 4}, node_name=node, phase="Running")
    found["spec"]["priority"] = priority
    return found


def gang(size: int, priority: int, annotations: dict[str, str] | None = None) -> list[Json]:
    members = []
    for i in range(size):
        said = {keys.GANG: "urgent", keys.GANG_SIZE: str(size), **(annotations or {})}
        member = nodes.pod(f"urgent-{i}", gpus=4, rdma={"rdma/hca": 4}, annotations=said)
        member["spec"]["priority"] = priority
        members.append(member)
    return members


def scheduler(objects: list[Json], clock: Clock, **settings: Any) -> Scheduler:
    source = SnapshotSource([*NODES, *objects])
    return Scheduler(
        source,
        lambda: DEFAULT,
        level_settings(GangSettings(), "kube-rdma", None),
        ("nvidia.com/gpu",),
        ("rdma/*",),
        clock=clock,
        contention=ContentionSettings(**settings),
        disruptions=ModelDisruptions(source.cluster),
    )


def cheap_leaf() -> list[Json]:
    """Every node busy at priority 1, except nodes 16-35 at priority 0: leaf-001 (nodes
    16-31, cliques 0 and 1) and the whole of clique 1 (nodes 18-35) are the cheapest."""
    return [occupant(i, 0 if 16 <= i <= 35 else 1) for i in range(len(NAMES))]


NVLINK = {keys.TOPOLOGY_REQUIRED: "nvlink"}


async def test_a_gang_requiring_the_nvlink_domain_preempts_inside_one_clique() -> None:
    clock = Clock()
    members = gang(16, 10, NVLINK)
    s = scheduler([*cheap_leaf(), *members], clock, hold_after=600)
    s.filter(members[0], NAMES)
    hold = s.holds.get(GANG)
    assert hold is not None
    assert hold.domain == f"{CLUSTER_UUID}.1"
    assert Counter(clique_of(n) for n in hold.nodes) == {"1": 16}
    victims = sorted(name for name, _ in hold.units)
    assert len(victims) == 16
    assert {clique_of(v.removeprefix("pod team-a/job-")) for v in victims} == {"1"}
    await s.evictor.drain()
    s.sweep()
    clock.now += 10
    placed = []
    for member in members:
        outcome = s.filter(member, NAMES)
        assert len(outcome.passed) == 1
        placed.append(outcome.passed[0])
    assert Counter(clique_of(n) for n in placed) == {"1": 16}
    assert len(set(placed)) == 16


async def test_without_the_requirement_the_cheapest_leaf_is_preempted_across_two_cliques() -> None:
    clock = Clock()
    members = gang(16, 10)
    s = scheduler([*cheap_leaf(), *members], clock, hold_after=600)
    s.filter(members[0], NAMES)
    hold = s.holds.get(GANG)
    assert hold is not None
    assert hold.domain == "leaf-001"
    assert Counter(clique_of(n) for n in hold.nodes) == {"0": 2, "1": 14}
    await s.evictor.drain()


def scattered() -> list[Json]:
    """Every node busy at priority 0 but nodes 16-21: leaf-001 has 6 of them free (2 short of
    8), clique 1 (nodes 18-35) 4 (4 short), clique 0 2."""
    return [occupant(i, 0) for i in range(len(NAMES)) if not 16 <= i <= 21]


def test_a_gang_preferring_the_nvlink_domain_holds_a_clique_before_any_leaf() -> None:
    members = gang(8, 0, {keys.TOPOLOGY_PREFERRED: "nvlink"})
    s = scheduler([*scattered(), *members], Clock(), hold_after=0, preemption=False)
    answer = s.filter(members[0], NAMES)
    hold = s.holds.get(GANG)
    assert hold is not None
    assert (hold.domain, hold.gpus) == (f"{CLUSTER_UUID}.1", 32)
    assert Counter(clique_of(n) for n in hold.nodes) == {"1": 8}
    assert answer.unresolvable[NAMES[0]].endswith(
        f"; 8 nodes in {CLUSTER_UUID}.1 held for it while they drain"
    )


def test_a_gang_asking_no_level_holds_the_leaf_that_needs_least_freed() -> None:
    members = gang(8, 0)
    s = scheduler([*scattered(), *members], Clock(), hold_after=0, preemption=False)
    s.filter(members[0], NAMES)
    hold = s.holds.get(GANG)
    assert hold is not None
    assert hold.domain == "leaf-001"
    assert Counter(clique_of(n) for n in hold.nodes) == {"0": 2, "1": 6}


def spines_taken() -> list[Json]:
    """Nodes 0-7 free; the rest of spine-00 (nodes 0-31) and all of spine-01 (32-63) busy at
    priority 10; spine-02 (nodes 64-71) at priority 0. Only the zone, across spines, can be
    freed for 16 members of priority 10."""
    return [occupant(i, 0 if i >= 64 else 10) for i in range(8, len(NAMES))]


async def test_a_gang_requiring_a_spine_never_preempts_wider_than_a_spine() -> None:
    clock = Clock()
    required = gang(16, 10, {keys.TOPOLOGY_REQUIRED: keys.SPINE})
    s = scheduler([*spines_taken(), *required], clock, hold_after=600)
    answer = s.filter(required[0], NAMES)
    assert s.holds.get(GANG) is None
    reason = "gang team-a/urgent needs 16 x (4 GPU, 4 rails) inside one kube-rdma.io/spine domain"
    assert answer.unresolvable[NAMES[0]].startswith(reason)
    assert "preempting" not in answer.unresolvable[NAMES[0]]
    free = gang(16, 10)
    s = scheduler([*spines_taken(), *free], clock, hold_after=600)
    s.filter(free[0], NAMES)
    hold = s.holds.get(GANG)
    assert hold is not None, "asking no level, the zone is preempted"
    assert hold.domain == "zone-0"
    await s.evictor.drain()


def test_a_gang_requiring_a_spine_too_wide_for_a_leaf_holds_a_spine() -> None:
    """Holds drain whatever the occupants' priority: 20 members fit no leaf of 16 nodes; the
    spine with 8 nodes free already (spine-00) is held."""
    required = gang(20, 10, {keys.TOPOLOGY_REQUIRED: keys.SPINE})
    s = scheduler([*spines_taken(), *required], Clock(), hold_after=0, preemption=False)
    s.filter(required[0], NAMES)
    hold = s.holds.get(GANG)
    assert hold is not None
    assert (hold.domain, hold.gpus) == ("spine-00", 80)
    assert sorted(NAMES.index(n) for n in hold.nodes)[:8] == list(range(8))
    assert all(NAMES.index(n) < 32 for n in hold.nodes)


def test_a_sliced_gang_holds_a_domain_where_each_slice_fits_inside_one_clique() -> None:
    """32 members in slices of 16, each slice inside one NVLink domain, every node busy: a
    spine (32 nodes) has room for 32 members but parts of two or three cliques, so no slice
    fits twice; the zone is held, one clique per slice."""
    sliced = {keys.TOPOLOGY_SLICE_REQUIRED: "nvlink", keys.TOPOLOGY_SLICE_SIZE: "16"}
    members = gang(32, 0, sliced)
    busy = [occupant(i, 0) for i in range(len(NAMES))]
    s = scheduler([*busy, *members], Clock(), hold_after=0, preemption=False)
    s.filter(members[0], NAMES)
    hold = s.holds.get(GANG)
    assert hold is not None
    assert (hold.domain, hold.gpus) == ("zone-0", 128)
    assert sorted(Counter(clique_of(n) for n in hold.nodes).values()) == [16, 16]
