"""The kept verdict tables give the in-tree pass exactly what judging every node gives: the same
node, the same count sampled, the same reasons, whatever nodes, usage and nominations did in
between."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from kube_rdma.core.objects import Json
from kubesim.scheduler import GPU, RDMA, SchedulerConfig
from kubesim.scheduler.cache import SchedulerCache
from kubesim.scheduler.changes import ChangeLog
from kubesim.scheduler.clock import ManualClock
from kubesim.scheduler.fit import NodeUsage
from kubesim.scheduler.nodetree import NodeTree
from kubesim.scheduler.placement import Placement, Unschedulable
from kubesim.scheduler.verdicts import NodeTable
from tests.kubesim.scheduler.cluster import node, pod

ZONES = ["", "a", "b", "c"]
ZONE = "topology.kubernetes.io/zone"

# The changes land on the first nodes of the walk, where they decide what it finds.
place = st.tuples(st.just("place"), st.integers(0, 7), st.integers(0, 8))
nominate = st.tuples(st.just("nominate"), st.integers(0, 7), st.integers(0, 8))
node_change = st.tuples(st.just("node"), st.integers(0, 7), st.integers(0, 8))
remove = st.tuples(st.just("remove"), st.integers(0, 7), st.just(0))
schedule = st.tuples(st.just("schedule"), st.sampled_from([0, 8]), st.integers(0, 1))
changes = st.one_of(place, nominate, node_change, remove)
steps = st.lists(st.one_of(changes, schedule), min_size=10, max_size=40)


def gpu_node(index: int, gpus: int, zone: str) -> Json:
    labels = {ZONE: zone} if zone else {}
    return node(f"n{index:03}", gpus, labels)


def gpu_pod(name: str, gpus: int, priority: int) -> Json:
    made = pod(name, gpus)
    made["spec"]["priority"] = priority
    return made


def requests(gpus: int) -> dict[str, int]:
    return {GPU: gpus, RDMA: 1} if gpus else {"cpu": 1000}


async def outcome(placement: Placement, made: Json, slow: bool) -> tuple[object, ...]:
    """find_node's answer; `slow` passes a claims filter that passes every node, which takes
    the pass that calls a filter per node."""
    try:
        return await placement.find_node(made, None, (lambda _: None) if slow else None)
    except Unschedulable as failure:
        return str(failure), failure.failed, failure.in_tree


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(0, 8), st.sampled_from(ZONES)), min_size=1, max_size=150),
    percentage=st.sampled_from([None, 5, 30, 100]),
    steps=steps,
)
def test_the_kept_pass_finds_what_the_node_by_node_pass_finds(
    sizes: list[tuple[int, str]], percentage: int | None, steps: list[tuple[str, int, int]]
) -> None:
    cache = SchedulerCache()
    for index, (gpus, zone) in enumerate(sizes):
        cache.node_changed(None, gpu_node(index, gpus, zone))
    config = SchedulerConfig(percentage_of_nodes_to_score=percentage)
    clock = ManualClock()
    kept = Placement(config, cache.nodes, cache.tree, cache.usage, clock, cache.nominations)
    node_by_node = Placement(config, cache.nodes, cache.tree, cache.usage, clock, cache.nominations)
    names = [f"n{i:03}" for i in range(len(sizes))]
    for number, (step, which, amount) in enumerate(steps):
        key = ("team-a", f"p{number}")
        target = names[which % len(names)]
        if step == "place":
            cache.usage.place(key, target, requests(amount))
        elif step == "nominate":
            cache.nominations.set(key, target, amount % 3, requests(amount))
        elif step == "node":  # in place half the time, else maybe to another zone
            zone = sizes[which % len(names)][1] if amount % 2 else ZONES[amount % 4]
            cache.node_changed(None, gpu_node(which % len(names), amount, zone))
        elif step == "remove" and len(cache.tree.list()) > 1:
            cache.node_changed(gpu_node(which % len(names), 0, ""), None)
        elif step == "schedule":
            made = gpu_pod(f"p{number}", which, amount)
            found = asyncio.run(outcome(kept, made, slow=False))
            assert found == asyncio.run(outcome(node_by_node, made, slow=True))
            if len(found) == 2:  # placed: assumed there, as the scheduler would
                cache.usage.place(key, str(found[0]), requests(which))


@settings(max_examples=100, deadline=None)
@given(
    gpus=st.lists(st.integers(0, 8), min_size=1, max_size=30),
    changes=st.lists(st.tuples(st.integers(0, 29), st.integers(0, 8)), max_size=30),
    limit=st.integers(1, 8),
)
def test_a_table_behind_a_forgetful_journal_judges_every_node_again(
    gpus: list[int], changes: list[tuple[int, int]], limit: int
) -> None:
    tree, usage, facts = NodeTree(), NodeUsage(), {}
    usage.touched = ChangeLog(limit)
    for index, count in enumerate(gpus):
        facts[f"n{index}"] = count
        tree.upsert(f"n{index}", "")

    def judge(name: str) -> str | None:
        free = facts[name] - usage.of(name).get(GPU, 0)
        return None if free >= 4 else "Insufficient nvidia.com/gpu"

    table = NodeTable(judge)
    for number, (which, amount) in enumerate(changes):
        usage.place(("ns", f"p{number}"), f"n{which % len(gpus)}", {GPU: amount})
        if number % 3 == 0:
            assert table.current(tree, [usage.touched]) == [judge(n) for n in tree.list()]
    assert table.current(tree, [usage.touched]) == [judge(n) for n in tree.list()]


def three_free_nodes() -> tuple[SchedulerCache, Placement]:
    """Three 8-GPU nodes of one zone, nothing on them, and the in-tree pass over them."""
    cache = SchedulerCache()
    for index in range(3):
        cache.node_changed(None, gpu_node(index, 8, "a"))
    placement = Placement(
        SchedulerConfig(), cache.nodes, cache.tree, cache.usage, ManualClock(), cache.nominations
    )
    return cache, placement


def test_a_node_changed_in_place_is_judged_again() -> None:
    cache, placement = three_free_nodes()
    assert asyncio.run(outcome(placement, gpu_pod("p0", 8, 0), slow=False)) == ("n000", 3)
    cache.node_changed(None, gpu_node(0, 4, "a"))
    cache.nominations.set(("team-a", "other"), "n001", 0, requests(8))
    assert asyncio.run(outcome(placement, gpu_pod("p1", 8, 0), slow=False)) == ("n002", 1)
    cache.usage.place(("team-a", "running"), "n002", requests(8))
    message = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    assert asyncio.run(outcome(placement, gpu_pod("p2", 8, 0), slow=False))[0] == message


def test_the_kept_scores_follow_the_usage() -> None:
    cache, placement = three_free_nodes()
    assert asyncio.run(outcome(placement, gpu_pod("p0", 1, 0), slow=False)) == ("n000", 3)
    cache.usage.place(("team-a", "a"), "n000", requests(4))
    cache.usage.place(("team-a", "b"), "n001", requests(2))
    assert asyncio.run(outcome(placement, gpu_pod("p1", 1, 0), slow=False)) == ("n002", 3)
    cache.node_changed(None, gpu_node(2, 2, "a"))  # 50 against n001's 62
    assert asyncio.run(outcome(placement, gpu_pod("p2", 1, 0), slow=False)) == ("n001", 3)
