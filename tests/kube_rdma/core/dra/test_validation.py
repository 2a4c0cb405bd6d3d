"""What Kubernetes' validation or allocator refuses is refused here too, with the field and
the reason, and never half-read: a ResourceSlice the apiserver would not store counts for
nothing but leaves the node's other slices counting (k8s.io/kubernetes pkg/apis/resource/
validation ValidateResourceSlice); a request, selector or class the allocator refuses fails
every node (k8s.io/dynamic-resource-allocation structured/internal/stable/allocator_stable.go
validateDeviceRequest); a claim needing more than 32 devices is refused
(AllocationResultsMaxSize)."""

from __future__ import annotations

import pytest

from kube_rdma.core.dra.allocate import Refusal, allocate
from kube_rdma.core.dra.demand import pod_demand
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.objects import Json
from tests.kube_rdma.core.dra.fixtures import (
    GPU_CLASS,
    claim,
    exactly,
    gpu,
    gpu_slice,
    nic,
    nic_slice,
    pod,
    slice_,
)


@pytest.mark.parametrize(
    ("bad", "note"),
    [
        (
            slice_("n1-bad", "n1", "dra.net", [nic(0), nic(0)], pool="n1-bad"),
            "ResourceSlice n1-bad is refused: spec.devices[1].name: duplicate value "
            "'pci-0000-20-00-0'",
        ),
        (
            slice_("n1-bad", "n1", "dra.net", [nic(0)], pool="n1-bad", count=0),
            "ResourceSlice n1-bad is refused: spec.pool.resourceSliceCount 0: must be greater "
            "than zero",
        ),
        (
            slice_("n1-bad", "n1", "", [nic(0)], pool="n1-bad"),
            "ResourceSlice n1-bad is refused: spec.driver: required",
        ),
    ],
)
def test_a_slice_validation_refuses_counts_for_nothing_and_hides_no_other(
    bad: Json, note: str
) -> None:
    index = DraIndex()
    index.replace_slices([gpu_slice("n1"), nic_slice("n1"), bad])
    node = index.node("n1")
    assert node is not None
    assert (node.count("gpu"), node.count("nic")) == (8, 8)
    assert note in node.notes


def test_a_device_name_in_two_slices_of_a_pool_makes_the_pool_invalid() -> None:
    """The allocator's poolIsInvalid (pools_stable.go): the pool counts nothing, and 1.35's
    allocator fails when nothing else can serve the claim."""
    index = DraIndex()
    twice = [
        slice_(f"n1-gpu-{i}", "n1", "gpu.nvidia.com", [gpu(0)], count=2, pool="n1")
        for i in range(2)
    ]
    index.replace_slices(twice)
    index.upsert_class(GPU_CLASS)
    index.upsert_claim(claim("c", [exactly("g", "gpu.nvidia.com")]))
    node = index.node("n1")
    assert node is not None
    assert node.count("gpu") == 0
    assert node.notes == ("pool n1 of gpu.nvidia.com is invalid: duplicate device name gpu-0",)
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "c"}]), index, Selectors())
    assert allocate(demand, "n1", node, Selectors()) == Refusal(
        "invalid resource pools were encountered: pool n1 of gpu.nvidia.com is invalid: "
        "duplicate device name gpu-0",
        resolvable=False,
        error=True,
    )


@pytest.mark.parametrize(
    ("request_", "problem"),
    [
        (
            {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "x"}},
            "claim default/c request g: allocationMode 'x': unsupported count mode "
            "(ExactCount or All)",
        ),
        (
            {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "selectors": [{}]}},
            "claim default/c request g: selectors[0]: CEL expression empty (unsupported "
            "selector type?)",
        ),
        (
            {"name": "g", "exactly": {"count": 1}},
            "claim default/c request g: deviceClassName: missing device class name",
        ),
        (
            {
                "name": "g",
                "exactly": {
                    "deviceClassName": "gpu.nvidia.com",
                    "allocationMode": "All",
                    "count": 2,
                },
            },
            "claim default/c request g: count: must not be set with allocationMode All",
        ),
        (
            {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": -1}},
            "claim default/c request g: count -1: must be greater than zero",
        ),
        (
            {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": "8"}},
            "claim default/c request g: count '8': not an integer",
        ),
    ],
)
def test_a_request_the_allocator_refuses_is_a_problem_naming_the_field(
    request_: Json, problem: str
) -> None:
    index = DraIndex()
    index.upsert_class(GPU_CLASS)
    index.upsert_claim(claim("c", [request_]))
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "c"}]), index, Selectors())
    assert demand.problems == (problem,)
    assert demand.requests == ()


def test_a_class_with_a_selector_without_cel_is_a_problem() -> None:
    index = DraIndex()
    index.upsert_class({"metadata": {"name": "odd"}, "spec": {"selectors": [{"future": {}}]}})
    index.upsert_claim(claim("c", [exactly("g", "odd")]))
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "c"}]), index, Selectors())
    assert demand.problems == (
        "claim default/c request g: DeviceClass odd: selectors[0]: CEL expression empty "
        "(unsupported selector type?)",
    )


def test_a_claim_over_32_devices_is_refused_on_every_node() -> None:
    index = DraIndex()
    index.replace_slices([gpu_slice("n1", 40)])
    index.upsert_class(GPU_CLASS)
    index.upsert_claim(
        claim("c", [exactly("a", "gpu.nvidia.com", 30), exactly("b", "gpu.nvidia.com", 3)])
    )
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "c"}]), index, Selectors())
    assert allocate(demand, "n1", index.node("n1"), Selectors()) == Refusal(
        "claim default/c: number of requested devices 33 exceeds the claim limit of 32",
        resolvable=False,
        error=True,
    )
