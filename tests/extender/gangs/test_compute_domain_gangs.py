"""Gangs whose pods hold a ComputeDomain claim (multi-node NVLink, NVIDIA's GPU DRA driver)
require the NVLink domain, with no annotation of ours: on an NVL72-style cluster (4 NVLink
partitions of 18 nodes x 4 GPUs, leaves of 16 nodes across them) each lands inside one
partition, each slice does when the job is sliced, one larger than a partition is refused at
once, and a cluster whose nodes carry no NVLink label says so."""

from __future__ import annotations

from collections import Counter

from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings
from extender.gangs.settings import level_settings
from extender.levels.vocabularies import CLIQUE
from extender.podview import pod_view
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.clustergen.vocabularies import CLUSTER_UUID, nvl72
from tests.extender.gangs.fabric import Fabric, gang_members
from tests.extender.gangs.test_nvl72 import clique_of
from tests.extender.levels.compute_domain import TEMPLATE, dra_objects, with_channel

CLAIM = f"team-a/{TEMPLATE}"


def fabric(nodes: list[Json] | None = None, topology: str = "kube-rdma") -> Fabric:
    objects = [*(nodes or nvl72(4)), *dra_objects()]
    return Fabric(objects, level_settings(GangSettings(), topology, None))


def mnnvl(
    name: str, size: int, annotations: dict[str, str] | None = None
) -> tuple[Gang, list[Json]]:
    gang, members = gang_members(name, size, gpus=4, annotations=annotations)
    return gang, [with_channel(m) for m in members]


def test_a_gang_with_a_compute_domain_claim_lands_in_one_clique() -> None:
    """Without the claim the second gang takes the leaf of nodes 16-31, across cliques 0 and
    1 (tests/extender/gangs/test_nvl72.py): with it, one clique."""
    f = fabric()
    first, members = gang_members("first", 16, gpus=4)
    assert isinstance(f.place(first, members), list)
    gang, members = mnnvl("mnnvl", 16)
    placed = f.place(gang, members)
    assert isinstance(placed, list)
    assert len(Counter(clique_of(node) for node in placed)) == 1
    assert f.planner.requirements.placement(pod_view(members[0]), gang).describe() == (
        f"required nvlink (ComputeDomain claim {CLAIM})"
    )


def test_one_larger_than_any_clique_is_refused_at_once_with_the_claim_named() -> None:
    f = fabric()
    gang, members = mnnvl("big", 19)
    f.submit(members)
    reason = (
        f"gang team-a/big requires 19 x (4 GPU, 4 rails) inside one nvlink domain for "
        f"ComputeDomain claim {CLAIM}: the largest, {CLUSTER_UUID}.3, holds 18 even with "
        "nothing else running; it can never be placed"
    )
    outcome = f.filter(gang, members[0])
    assert outcome is not None
    assert outcome.unresolvable == dict.fromkeys(f.names, reason)


def test_a_sliced_gang_puts_each_slice_in_one_clique_whatever_level_it_named() -> None:
    """Slices asked in the spine: the ComputeDomain claim makes each slice one clique's."""
    f = fabric()
    sliced = {keys.TOPOLOGY_SLICE_REQUIRED: keys.SPINE, keys.TOPOLOGY_SLICE_SIZE: "18"}
    gang, members = mnnvl("llm", 72, sliced)
    f.submit(members)
    placed = {}
    for i in sorted(range(72), key=lambda i: (i * 37) % 72):
        outcome = f.filter(gang, members[i])
        assert outcome is not None
        assert len(outcome.passed) == 1
        placed[i] = outcome.passed[0]
    slices = [{clique_of(placed[i]) for i in range(k * 18, (k + 1) * 18)} for k in range(4)]
    assert sorted(c for s in slices for c in s) == ["0", "1", "2", "3"]
    assert f.planner.requirements.placement(pod_view(members[0]), gang).describe() == (
        f"slices of 18 in one nvlink (kube-rdma.io, ComputeDomain claim {CLAIM}; "
        f"slices in {keys.SPINE} set aside)"
    )


def test_a_required_level_of_the_job_is_set_aside_for_the_nvlink_domain() -> None:
    f = fabric()
    gang, members = mnnvl("spine", 16, {keys.TOPOLOGY_REQUIRED: keys.SPINE})
    f.submit(members)
    assert f.planner.requirements.placement(pod_view(members[0]), gang).describe() == (
        f"required nvlink (kube-rdma.io, ComputeDomain claim {CLAIM}; "
        f"required {keys.SPINE} set aside)"
    )
    asked = {keys.TOPOLOGY_REQUIRED: CLIQUE}
    gang, members = mnnvl("clique", 16, asked)
    f.submit(members)
    assert f.planner.requirements.placement(pod_view(members[0]), gang).describe() == (
        f"required nvlink (kube-rdma.io, ComputeDomain claim {CLAIM})"
    )


def test_without_nvlink_labels_the_gang_is_refused_with_the_labels_looked_for() -> None:
    nodes = nvl72(1)
    for node in nodes:
        del node["metadata"]["labels"][CLIQUE]
    f = fabric(nodes, "eks")
    gang, members = mnnvl("mnnvl", 4)
    f.submit(members)
    assert f.planner.refusal(pod_view(members[0]), gang) == (
        f"gang team-a/mnnvl requires 4 x (4 GPU, 4 rails) inside one nvlink domain for "
        f"ComputeDomain claim {CLAIM}: no node it may use carries an NVLink domain label of "
        "the levels in use (eks: nvidia.com/gpu.clique or topology.k8s.aws/ultraserver-id); "
        "it can never be placed"
    )


def test_pods_without_the_claim_are_not_held_to_one_clique() -> None:
    f = fabric()
    gang, members = gang_members("plain", 16, gpus=4)
    f.submit(members)
    assert f.planner.requirements.placement(pod_view(members[0]), gang).describe() == (
        "no level asked (none)"
    )
