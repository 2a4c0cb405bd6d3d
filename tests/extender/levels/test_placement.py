"""What a job asks of the levels, from kube-rdma's, KAI scheduler's and Kueue's annotations,
and the levels each ask is planned over. KAI's and Kueue's cases quote their documentation:
NVIDIA/KAI-Scheduler docs/topology/README.md and kubernetes-sigs/kueue
site/static/examples/tas/sample-job-required.yaml, sample-job-preferred.yaml."""

from __future__ import annotations

import pytest

from extender.levels.placement import Placement, placement_of
from extender.levels.search import Search
from extender.levels.vocabularies import PRESETS, Levels
from kube_rdma.core import keys
from kube_rdma.core.objects import Json

KUEUE_EXAMPLE = Levels(
    (
        "kubernetes.io/hostname",
        "cloud.provider.com/topology-rack",
        "cloud.provider.com/topology-block",
    ),
    source="Topology default",
)
"""Kueue's sample Topology `default` (site/static/examples/tas/sample-queues.yaml), its levels
block, rack, hostname listed top to bottom, here narrowest first."""


def pod(annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Json:
    return {"metadata": {"name": "p", "annotations": annotations or {}, "labels": labels or {}}}


def owner(annotations: dict[str, str]) -> Json:
    return {"kind": "Job", "metadata": {"name": "distributed-training", "annotations": annotations}}


# KAI's README: "To enforce strict rack-level locality", "For soft affinity", and the two
# combined, "require block-level placement while preferring rack-level locality".
KAI_REQUIRED = {
    "kai.scheduler/topology": "cluster-topology",
    "kai.scheduler/topology-required-placement": "cloud.provider.com/topology-rack",
}
KAI_PREFERRED = {
    "kai.scheduler/topology": "cluster-topology",
    "kai.scheduler/topology-preferred-placement": "cloud.provider.com/topology-rack",
}
KAI_BOTH = {
    "kai.scheduler/topology": "cluster-topology",
    "kai.scheduler/topology-required-placement": "cloud.provider.com/topology-block",
    "kai.scheduler/topology-preferred-placement": "cloud.provider.com/topology-rack",
}
RACK, BLOCK, HOST = (
    "cloud.provider.com/topology-rack",
    "cloud.provider.com/topology-block",
    "kubernetes.io/hostname",
)


@pytest.mark.parametrize(
    ("annotations", "placement", "search"),
    [
        (
            KAI_REQUIRED,
            Placement(required=RACK, source="kai.scheduler"),
            Search((HOST, RACK), cluster=False),
        ),
        (
            KAI_PREFERRED,
            Placement(preferred=RACK, source="kai.scheduler"),
            Search((HOST, RACK, BLOCK), cluster=True),
        ),
        (
            KAI_BOTH,
            Placement(required=BLOCK, preferred=RACK, source="kai.scheduler"),
            Search((HOST, RACK, BLOCK), cluster=False),
        ),
    ],
)
def test_kai_annotations_on_the_top_owner(
    annotations: dict[str, str], placement: Placement, search: Search
) -> None:
    found = placement_of(pod(), owner(annotations))
    assert found == placement
    assert found.search(KUEUE_EXAMPLE) == search


def test_kai_annotations_on_the_pod_alone_are_not_kais() -> None:
    """KAI reads them from the workload's top owner, not its pods."""
    assert placement_of(pod(KAI_REQUIRED), None) == Placement()


def test_kueue_required_and_preferred_from_its_sample_jobs() -> None:
    required = pod({"kueue.x-k8s.io/podset-required-topology": RACK})
    assert placement_of(required) == Placement(required=RACK, source="kueue")
    assert placement_of(required).search(KUEUE_EXAMPLE) == Search((HOST, RACK), cluster=False)
    preferred = pod({"kueue.x-k8s.io/podset-preferred-topology": BLOCK})
    assert placement_of(preferred) == Placement(preferred=BLOCK, source="kueue")
    assert placement_of(preferred).search(KUEUE_EXAMPLE) == Search((HOST, RACK, BLOCK))


def test_kueue_slices_and_nvlink() -> None:
    sliced = pod(
        {
            "kueue.x-k8s.io/podset-required-topology": BLOCK,
            "kueue.x-k8s.io/podset-slice-required-topology": "nvidia.com/gpu.clique",
            "kueue.x-k8s.io/podset-slice-size": "16",
        }
    )
    found = placement_of(sliced)
    assert found == Placement(BLOCK, None, "nvidia.com/gpu.clique", 16, "kueue")
    assert found.search(KUEUE_EXAMPLE) == Search((HOST, RACK, BLOCK), False, "nvlink", 16)


def test_pods_kueue_placed_are_not_planned_against_its_annotations() -> None:
    """Kueue's TAS admitted them (the kueue.x-k8s.io/tas label) and gave them node selectors."""
    placed = pod({"kueue.x-k8s.io/podset-required-topology": RACK}, {"kueue.x-k8s.io/tas": "true"})
    assert placement_of(placed) == Placement(source="kueue-placed")
    assert placement_of(placed).search(KUEUE_EXAMPLE) == Search(KUEUE_EXAMPLE.fabric)


def test_our_annotations_come_first_and_nvlink_names_the_nvlink_level_in_any_vocabulary() -> None:
    ours = pod(
        {
            keys.TOPOLOGY_REQUIRED: "fabric.topograph.run/tier-1",
            keys.TOPOLOGY_SLICE_REQUIRED: "nvlink",
            keys.TOPOLOGY_SLICE_SIZE: "16",
        }
    )
    found = placement_of(ours, owner(KAI_REQUIRED))
    assert found.source == "kube-rdma.io"
    tiers = PRESETS["topograph"].fabric
    assert found.search(PRESETS["topograph"]) == Search(tiers[:2], False, "nvlink", 16)
    topograph_domain = pod({keys.TOPOLOGY_REQUIRED: "accelerator.topograph.run/domain"})
    assert placement_of(topograph_domain).search(PRESETS["topograph"]) == Search(
        ("nvlink",), cluster=False
    )


def test_preferring_nvlink_tries_it_before_the_fabric() -> None:
    found = placement_of(pod({keys.TOPOLOGY_PREFERRED: "nvlink"}))
    assert found.search(PRESETS["eks"]) == Search(("nvlink", *PRESETS["eks"].fabric))


@pytest.mark.parametrize(
    ("annotations", "problem"),
    [
        (
            {keys.TOPOLOGY_SLICE_SIZE: "16"},
            "kube-rdma.io/topology-slice-required is missing: set both or neither",
        ),
        (
            {keys.TOPOLOGY_SLICE_REQUIRED: "nvlink", keys.TOPOLOGY_SLICE_SIZE: "0"},
            "kube-rdma.io/topology-slice-size must be a whole number of pods, not '0'",
        ),
        (
            {"kueue.x-k8s.io/podset-slice-required-topology": RACK},
            "kueue.x-k8s.io/podset-slice-size is missing: set both or neither",
        ),
    ],
)
def test_unreadable_slices_say_what_to_fix(annotations: dict[str, str], problem: str) -> None:
    assert placement_of(pod(annotations)).problem == problem


def test_describe() -> None:
    assert placement_of(pod(), owner(KAI_BOTH)).describe() == (
        f"required {BLOCK}, preferred {RACK} (kai.scheduler)"
    )
    assert Placement().describe() == "no level asked (none)"
    sliced = Placement(None, None, "nvlink", 18, "kube-rdma.io")
    assert sliced.describe() == "slices of 18 in one nvlink (kube-rdma.io)"


CLAIM = "team-a/imex-channel-0"
CLIQUE_SLICES = Placement(BLOCK, None, "nvidia.com/gpu.clique", 16, "kueue")


@pytest.mark.parametrize(
    ("asked", "needing", "search"),
    [
        (
            Placement(),
            Placement(required="nvlink", nvlink_claim=CLAIM),
            Search(("nvlink",), cluster=False),
        ),
        # A switch tier preferred is not tried before the NVLink domain: it need not nest in
        # one, and a domain of it holding the gang would be taken whole.
        (
            Placement(required=RACK, preferred=HOST, source="kube-rdma.io"),
            Placement("nvlink", HOST, None, 0, "kube-rdma.io", None, CLAIM, f"required {RACK}"),
            Search(("nvlink",), cluster=False),
        ),
        # A vocabulary's NVLink label is the NVLink level: nothing is set aside.
        (
            CLIQUE_SLICES,
            Placement(BLOCK, None, "nvlink", 16, "kueue", None, CLAIM),
            Search((HOST, RACK, BLOCK), False, "nvlink", 16),
        ),
        (
            Placement(None, None, RACK, 8, "kube-rdma.io"),
            Placement(None, None, "nvlink", 8, "kube-rdma.io", None, CLAIM, f"slices in {RACK}"),
            Search((HOST, RACK, BLOCK), True, "nvlink", 8),
        ),
        # An annotation that cannot be read stays the reason the gang is not planned.
        (Placement(source="kueue", problem="x"), Placement(source="kueue", problem="x"), None),
    ],
)
def test_a_compute_domain_claim_requires_the_nvlink_domain(
    asked: Placement, needing: Placement, search: Search | None
) -> None:
    found = asked.needing_nvlink(CLAIM, KUEUE_EXAMPLE)
    assert found == needing
    assert found.needs_nvlink(KUEUE_EXAMPLE) == (found.problem is None)
    if search is not None:
        assert found.search(KUEUE_EXAMPLE) == search


def test_a_preferred_level_wider_than_the_required_one_is_not_tried_first() -> None:
    """A block domain holding the gang may span racks: tried first, it would break the rack
    requirement. A label outside the vocabulary may be anything, and is tried first."""
    wider = placement_of(pod({keys.TOPOLOGY_REQUIRED: RACK, keys.TOPOLOGY_PREFERRED: BLOCK}))
    assert wider.search(KUEUE_EXAMPLE) == Search((HOST, RACK), cluster=False)
    other = placement_of(pod({keys.TOPOLOGY_REQUIRED: RACK, keys.TOPOLOGY_PREFERRED: "x/pod"}))
    assert other.search(KUEUE_EXAMPLE) == Search(("x/pod", HOST, RACK), cluster=False)
    nvlink = placement_of(pod({keys.TOPOLOGY_REQUIRED: "nvlink", keys.TOPOLOGY_PREFERRED: RACK}))
    assert nvlink.search(KUEUE_EXAMPLE) == Search(("nvlink",), cluster=False)
