"""On an NVL72-style cluster (4 NVLink partitions of 18 nodes x 4 GPUs, leaves of 16 nodes that
do not line up with them): gangs that require the NVLink domain land inside one partition
each; one larger than any partition is refused at once with the numbers; a gang of 4 slices
of 18 lands one slice per partition, consecutive ranks together."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from extender.gangs.planner import GangSettings
from extender.gangs.settings import level_settings
from extender.levels import vocabularies as v
from extender.podview import pod_view
from kube_rdma.core import keys
from testbed.clustergen.vocabularies import CLUSTER_UUID, nvl72, relabel
from tests.extender.gangs.fabric import Fabric, gang_members

NVLINK = {keys.TOPOLOGY_REQUIRED: "nvlink"}


def clique_of(node: str) -> str:
    """gb-<clique>-<slot>"""
    return node.split("-")[1]


def fabric() -> Fabric:
    return Fabric(nvl72(4), level_settings(GangSettings(), "kube-rdma", None))


def test_gangs_that_require_the_nvlink_domain_land_in_one_clique_each() -> None:
    f = fabric()
    cliques = []
    for n in range(4):
        gang, members = gang_members(f"g{n}", 16, gpus=4, annotations=NVLINK)
        placed = f.place(gang, members)
        assert isinstance(placed, list)
        assert len(set(placed)) == 16, "one member per node: a member takes all 4 GPUs"
        cliques.append({clique_of(node) for node in placed})
    assert sorted(map(sorted, cliques)) == [["0"], ["1"], ["2"], ["3"]]


def test_without_the_requirement_the_narrowest_leaf_wins_across_two_cliques() -> None:
    """The first gang fills leaf-000 (nodes 0-15); the second the leaf of nodes 16-31, which
    holds it but spans cliques 0 and 1."""
    f = fabric()
    first, members = gang_members("first", 16, gpus=4)
    placed = f.place(first, members)
    assert isinstance(placed, list)
    assert Counter(clique_of(node) for node in placed) == {"0": 16}
    second, members = gang_members("second", 16, gpus=4)
    placed = f.place(second, members)
    assert isinstance(placed, list)
    assert Counter(clique_of(node) for node in placed) == {"0": 2, "1": 14}


def test_a_gang_larger_than_any_clique_is_refused_at_once_with_the_numbers() -> None:
    f = fabric()
    gang, members = gang_members("big", 19, gpus=4, annotations=NVLINK)
    reason = (
        "gang team-a/big requires 19 x (4 GPU, 4 rails) inside one nvlink domain: "
        f"the largest, {CLUSTER_UUID}.3, holds 18 even with nothing else running; "
        "it can never be placed"
    )
    f.submit(members)
    outcome = f.filter(gang, members[0])
    assert outcome is not None
    assert (outcome.passed, outcome.failed) == ([], {})
    assert outcome.unresolvable == dict.fromkeys(f.names, reason)
    assert f.planner.plans == {}
    assert f.planner.attempt(gang, pod_view(members[0])) == reason


def test_a_gang_that_fits_a_clique_later_waits_with_the_numbers_now() -> None:
    f = fabric()
    for n in range(4):
        gang, members = gang_members(f"g{n}", 10, gpus=4, annotations=NVLINK)
        assert isinstance(f.place(gang, members), list)
    gang, members = gang_members("late", 16, gpus=4, annotations=NVLINK)
    f.submit(members)
    assert f.planner.refusal(pod_view(members[0]), gang) is None
    reason = (
        "gang team-a/late needs 16 x (4 GPU, 4 rails) inside one nvlink domain: "
        f"best domain {CLUSTER_UUID}.3 fits 8"
    )
    outcome = f.filter(gang, members[0])
    assert outcome is not None
    assert outcome.unresolvable == dict.fromkeys(f.names, reason)


def test_a_72_node_gang_of_4_slices_of_18_lands_one_slice_per_clique() -> None:
    f = fabric()
    sliced = {keys.TOPOLOGY_SLICE_REQUIRED: "nvlink", keys.TOPOLOGY_SLICE_SIZE: "18"}
    gang, members = gang_members("llm", 72, gpus=4, annotations=sliced)
    # Members arrive out of rank order: each still takes a slot of its own slice.
    order = sorted(range(72), key=lambda i: (i * 37) % 72)
    f.submit(members)
    placed: dict[int, str] = {}
    for i in order:
        outcome = f.filter(gang, members[i])
        assert outcome is not None
        assert len(outcome.passed) == 1
        placed[i] = outcome.passed[0]
    slices = [{clique_of(placed[i]) for i in range(k * 18, (k + 1) * 18)} for k in range(4)]
    assert all(len(s) == 1 for s in slices), slices
    assert sorted(c for s in slices for c in s) == ["0", "1", "2", "3"]
    assert len(set(placed.values())) == 72


def test_a_slice_larger_than_any_clique_is_refused_at_once() -> None:
    f = fabric()
    sliced = {keys.TOPOLOGY_SLICE_REQUIRED: "nvidia.com/gpu.clique", keys.TOPOLOGY_SLICE_SIZE: "24"}
    gang, members = gang_members("wide", 48, gpus=4, annotations=sliced)
    f.submit(members)
    assert f.planner.refusal(pod_view(members[0]), gang) == (
        "gang team-a/wide requires each slice of 24 x (4 GPU, 4 rails) inside one nvlink domain: "
        f"the largest, {CLUSTER_UUID}.3, holds 18 even with nothing else running; "
        "it can never be placed"
    )


def test_a_clique_spanning_two_leaves_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    f = fabric()
    caplog.set_level(logging.WARNING, "kube_rdma.extender")
    cliques = set()
    for n in range(2):
        gang, members = gang_members(f"s{n}", 8, gpus=4, annotations=NVLINK)
        placed = f.place(gang, members)
        assert isinstance(placed, list)
        cliques |= {clique_of(node) for node in placed}
    assert cliques == {"0"}, "the second gang takes the rest of the tightest clique"
    spans = [r.getMessage() for r in caplog.records if "spans" in r.getMessage()]
    assert spans == [
        f"NVLink domain {CLUSTER_UUID}.0 spans 2 values of {keys.LEAF}: leaf-000, leaf-001"
    ]


def test_a_member_the_cache_lacks_yet_is_planned_as_its_gang_asks() -> None:
    """kube-scheduler may filter a pod before the extender's watch delivers it: the gang's
    requirement is read off the members the cache holds."""
    f = fabric()
    first, members = gang_members("first", 16, gpus=4)
    assert isinstance(f.place(first, members), list)  # leaf-000: clique 0's nodes 0-15
    gang, members = gang_members("early", 16, gpus=4, annotations=NVLINK)
    f.submit(members[1:])
    outcome = f.filter(gang, members[0])
    assert outcome is not None
    assert len(outcome.passed) == 1
    plan = f.planner.plans[gang.key]
    assert len({clique_of(node) for node in plan.slots}) == 1


def test_on_eks_each_gang_lands_in_one_ultraserver() -> None:
    """The EKS vocabulary: the NVLink domain is `topology.k8s.aws/ultraserver-id` (no clique
    label on the nodes), the switch layers network-node-layer-3 to -1."""
    nodes = relabel(nvl72(4), "eks")
    assert all(v.CLIQUE not in n["metadata"]["labels"] for n in nodes)
    f = Fabric(nodes, level_settings(GangSettings(), "eks", None))
    ultraservers = []
    for n in range(4):
        gang, members = gang_members(f"g{n}", 16, gpus=4, annotations=NVLINK)
        placed = f.place(gang, members)
        assert isinstance(placed, list)
        ultraservers.append({clique_of(node) for node in placed})
    assert sorted(map(sorted, ultraservers)) == [["0"], ["1"], ["2"], ["3"]]
