"""A takeover (extender HA, docs/ha.md) resumes a sliced gang's plan and a plan for members of
different node constraints as they were made: the record keeps the slice size and the group
each slot is for. The same records in the older format, without them, resume as such records
always did, and these cases show what that costs: ranks outside their slice's domain, and a
pinned member's slot taken by another, so the gang is planned again."""

from __future__ import annotations

from dataclasses import replace

from extender.book.records import MemoryRecords, PlanRecord
from extender.cluster.snapshot import SnapshotSource
from extender.gangs.planner import GangSettings
from extender.gangs.sampling import ruled_out_reason
from extender.gangs.settings import level_settings
from extender.scheduling import Scheduler
from extender.weights import Weights
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS
from testbed.builders import nodes
from testbed.clustergen.vocabularies import nvl72
from tests.extender.book.test_records import Recorded
from tests.extender.gangs.fabric import gang_members
from tests.extender.gangs.test_nvl72 import clique_of

SLICED = {keys.TOPOLOGY_SLICE_REQUIRED: "nvlink", keys.TOPOLOGY_SLICE_SIZE: "18"}
SETTINGS = level_settings(GangSettings(), "kube-rdma", None)


def scheduler(objects: list[Json], records: MemoryRecords) -> Scheduler:
    source = SnapshotSource(objects)
    return Scheduler(source, Weights, SETTINGS, ("nvidia.com/gpu",), DEFAULT_RDMA_PATTERNS, records)


def older(record: PlanRecord) -> PlanRecord:
    """The record as an extender that did not record slices or groups wrote it."""
    return replace(record, slice_size=0, groups=(), slot_groups=())


def sliced_gang() -> tuple[list[Json], list[Json], list[str], PlanRecord]:
    """Nodes, members, node names and the record of the plan a first extender made."""
    cluster = nvl72(4)
    gang, members = gang_members("llm", 72, gpus=4, annotations=SLICED)
    names = sorted(n["metadata"]["name"] for n in cluster)
    first = MemoryRecords()
    assert scheduler([*cluster, *members], first).filter(members[0], names).passed
    return cluster, members, names, replace(first.saved()[gang.key], holder="extender-1")


def take_over(
    record: PlanRecord, objects: list[Json], members: list[Json], names: list[str]
) -> tuple[Scheduler, dict[int, str]]:
    served = scheduler(objects, Recorded(record))
    placed: dict[int, str] = {}
    for i in sorted(range(len(members)), key=lambda i: (i * 37) % len(members)):
        outcome = served.filter(members[i], names)
        assert len(outcome.passed) == 1, outcome
        placed[i] = outcome.passed[0]
    return served, placed


def test_a_sliced_gang_s_ranks_go_to_their_slice_s_domain_after_a_takeover() -> None:
    cluster, members, names, record = sliced_gang()
    assert (record.slice_size, record.groups, len(record.slot_groups)) == (18, ({},), 72)
    served, placed = take_over(record, [*cluster, *members], members, names)
    assert list(served.planner.history) == [], "resumed, not planned again"
    for k in range(4):
        ranks = range(k * 18, (k + 1) * 18)
        assert {placed[i] for i in ranks} == set(record.slots[k * 18 : (k + 1) * 18])
        assert len({clique_of(placed[i]) for i in ranks}) == 1
    assert served.planner.records.saved()[("team-a", "llm")] == replace(record, holder="")


def test_the_older_record_resumes_as_before_and_scatters_the_ranks() -> None:
    cluster, members, names, record = sliced_gang()
    served, placed = take_over(older(record), [*cluster, *members], members, names)
    assert list(served.planner.history) == []
    assert sorted(placed.values()) == sorted(record.slots)
    slices = [{clique_of(placed[i]) for i in range(k * 18, (k + 1) * 18)} for k in range(4)]
    assert any(len(s) > 1 for s in slices), "members took the free slots in turn"
    assert served.planner.records.saved()[("team-a", "llm")] == older(replace(record, holder=""))


POOL_A, POOL_B = ["a0", "a1"], ["b0", "b1", "b2", "b3"]


def pools() -> list[Json]:
    return [
        nodes.node(n, nodes.hgx(), labels={keys.LEAF: "leaf-1", "pool": n[0]})
        for n in POOL_A + POOL_B
    ]


def pinned(index: int, pool: str) -> Json:
    said = {keys.GANG: "job", keys.GANG_SIZE: "4"}
    member = nodes.pod(f"job-{index}", annotations=said)
    member["spec"]["nodeSelector"] = {"pool": pool}
    return member


def mixed_gang() -> tuple[list[Json], PlanRecord]:
    """A master pinned to pool a and 3 workers to pool b; the record of its plan."""
    members = [pinned(0, "a"), *(pinned(i, "b") for i in range(1, 4))]
    first = MemoryRecords()
    assert scheduler([*pools(), *members], first).filter(members[0], POOL_A).passed
    return members, replace(first.saved()[("team-a", "job")], holder="extender-1")


def test_a_plan_for_pinned_groups_is_resumed_with_each_member_in_its_pool() -> None:
    """kube-scheduler sends each member only the nodes of its pool; the workers come first."""
    members, record = mixed_gang()
    assert record.groups == ({"nodeSelector": {"pool": "a"}}, {"nodeSelector": {"pool": "b"}})
    assert record.slot_groups == (0, 1, 1, 1)
    served = scheduler([*pools(), *members], Recorded(record))
    passed = [served.filter(m, POOL_B).passed for m in members[1:]]
    passed.insert(0, served.filter(members[0], POOL_A).passed)
    assert [p[0] for p in passed] == list(record.slots)
    assert list(served.planner.history) == [], "resumed, not planned again"


def test_the_older_record_gives_a_worker_the_master_s_slot_and_is_planned_again() -> None:
    members, record = mixed_gang()
    served = scheduler([*pools(), *members], Recorded(older(record)))
    outcome = served.filter(members[1], POOL_B)
    reason = ruled_out_reason("team-a/job", record.slots[0], len(POOL_B))
    assert (outcome.passed, outcome.unresolvable) == ([], dict.fromkeys(POOL_B, reason))
    assert len(served.planner.history) == 1, "planned again"


def test_a_member_bound_before_the_takeover_takes_a_slot_of_its_own_group() -> None:
    """a0 holds two slots, the master's and a worker's; the worker bound there before the
    takeover must not take the master's (it did, given the first free slot of its node, and
    the next worker was then sent to a0 too: three members on a node planned for two)."""
    master = pinned(0, "a")
    workers = [pinned(i, "b") for i in range(1, 4)]
    for worker in workers:
        del worker["spec"]["nodeSelector"]
    half = [
        nodes.node(n, nodes.hgx(), labels={keys.LEAF: "leaf-1", "pool": n[0]}) for n in ("a0", "b0")
    ]
    for member in (master, *workers):
        for resources in (c["resources"] for c in member["spec"]["containers"]):
            resources["limits"]["nvidia.com/gpu"] = resources["requests"]["nvidia.com/gpu"] = "4"
    bound = {**workers[0], "spec": {**workers[0]["spec"], "nodeName": "a0"}}
    record = PlanRecord(
        ("team-a", "job"),
        4,
        "leaf-1",
        ("a0", "a0", "b0", "b0"),
        "extender-1",
        groups=({"nodeSelector": {"pool": "a"}}, {}),
        slot_groups=(0, 1, 1, 1),
    )
    served = scheduler([*half, master, bound, *workers[1:]], Recorded(record))
    assert served.filter(master, ["a0"]).passed == ["a0"]
    assert [served.filter(w, ["a0", "b0"]).passed for w in workers[1:]] == [["b0"], ["b0"]]
    assigned = served.planner.plans[("team-a", "job")].assigned
    assert {name: slot for (_, name), slot in assigned.items()} == {
        "job-0": 0,
        "job-1": 1,
        "job-2": 2,
        "job-3": 3,
    }


def test_a_member_bound_before_the_takeover_takes_a_slot_of_its_rank_s_slice() -> None:
    """gb-0-01 holds the last slot of slice 0 and the first of slice 1; rank 3, bound there
    before the takeover, takes slice 1's, and rank 2 still finds slice 0's."""
    sliced = {keys.TOPOLOGY_SLICE_REQUIRED: "nvlink", keys.TOPOLOGY_SLICE_SIZE: "3"}
    gang, members = gang_members("small", 6, gpus=2, annotations=sliced)
    members[3]["spec"]["nodeName"] = "gb-0-01"
    slots = ("gb-0-00", "gb-0-00", "gb-0-01", "gb-0-01", "gb-0-02", "gb-0-02")
    record = PlanRecord(gang.key, 6, "cluster", slots, "extender-1", None, 3, ({},), (0,) * 6)
    cluster = nvl72(1)
    names = sorted(n["metadata"]["name"] for n in cluster)
    served = scheduler([*cluster, *members], Recorded(record))
    placed = {i: served.filter(members[i], names).passed[0] for i in (5, 4, 2, 1, 0)}
    assert sorted(placed[i] for i in range(3)) == ["gb-0-00", "gb-0-00", "gb-0-01"]
    assert (placed[4], placed[5]) == ("gb-0-02", "gb-0-02")
    assert served.planner.plans[gang.key].assigned[("team-a", "small-3")] == 3
