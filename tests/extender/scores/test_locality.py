"""The locality score keeps pods of no plan out of the domain a planned gang fills at its own
narrowest level, on an NVL72-style cluster (4 NVLink partitions of 18 nodes x 4 GPUs, leaves
of 16 nodes that do not line up with them): the whole NVLink domain of a gang that requires
one, the leaf of a gang that asks nothing, and only the held nodes of a plan that had to go
wider than its narrowest level."""

from __future__ import annotations

import pytest

from extender.cluster.snapshot import SnapshotSource
from extender.gangs.planner import GangSettings
from extender.gangs.settings import level_settings
from extender.scheduling import Scheduler
from extender.weights import Weights
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.clustergen.vocabularies import nvl72

NODES = nvl72(4)
NAMES = [str(n["metadata"]["name"]) for n in NODES]
LOCALITY_ONLY = Weights(affinity=0, rate=0, binpack=0, locality=1)


def gang(size: int, annotations: dict[str, str]) -> list[Json]:
    said = {keys.GANG: "g", keys.GANG_SIZE: str(size), **annotations}
    return [
        nodes.pod(f"g-{i}", gpus=4, rdma={"rdma/hca": 4}, annotations=said) for i in range(size)
    ]


def labels_of(name: str) -> dict[str, str]:
    found = next(n for n in NODES if n["metadata"]["name"] == name)
    return dict(found["metadata"]["labels"])


@pytest.mark.parametrize(
    ("case", "size", "annotations", "fenced_by"),
    [
        ("requires the NVLink domain", 8, {keys.TOPOLOGY_REQUIRED: "nvlink"}, "clique"),
        ("asks nothing: the leaf", 6, {}, keys.LEAF),
        (
            "prefers NVLink but is wider than any: held nodes only",
            20,
            {keys.TOPOLOGY_PREFERRED: "nvlink"},
            None,
        ),
    ],
)
def test_pods_of_no_plan_score_0_in_the_domain_a_plan_fills_at_its_own_level(
    case: str, size: int, annotations: dict[str, str], fenced_by: str | None
) -> None:
    members = gang(size, annotations)
    solo = nodes.pod("solo", gpus=4, rdma={"rdma/hca": 4})
    s = Scheduler(
        SnapshotSource([*NODES, *members, solo]),
        lambda: LOCALITY_ONLY,
        level_settings(GangSettings(), "kube-rdma", None),
        ("nvidia.com/gpu",),
        ("rdma/*",),
    )
    assert len(s.filter(members[0], NAMES).passed) == 1, case
    plan = s.planner.plans[("team-a", "g")]
    held = set(plan.slots)
    assert len(held) == size
    if fenced_by is None:
        expected = held
    else:
        label = "nvidia.com/gpu.clique" if fenced_by == "clique" else fenced_by
        value = labels_of(plan.slots[0])[label]
        expected = {n for n in NAMES if labels_of(n)[label] == value}
        assert expected > held, "the domain is wider than the nodes the plan holds"
    scores = s.prioritize(solo, NAMES)
    assert {n for n, score in scores.items() if score == 0} == expected, case
    assert {score for n, score in scores.items() if n not in expected} == {10.0}
