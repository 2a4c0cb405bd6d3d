"""A pod's claims resolved and judged against a node's free devices."""

from __future__ import annotations

import pytest

from kube_rdma.core.dra.allocate import Allocation, Refusal, allocate
from kube_rdma.core.dra.constraints import Constraint
from kube_rdma.core.dra.demand import Choice, DeviceRequest, PodDemand, pod_demand
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import SelectorError, Selectors
from tests.kube_rdma.core.dra.fixtures import (
    GPU_CLASS,
    NIC_CLASS,
    claim,
    exactly,
    gpu_slice,
    load,
    nic,
    nic_slice,
    pod,
    slice_,
)

GPU_SELECTOR = GPU_CLASS["spec"]["selectors"][0]["cel"]["expression"]
NIC_SELECTOR = 'device.driver == "dra.net"'
RDMA = 'device.attributes["dra.net"].rdma == true'


@pytest.fixture
def index() -> DraIndex:
    index = DraIndex()
    index.replace_slices([gpu_slice("n1"), nic_slice("n1"), gpu_slice("n2"), nic_slice("n2")])
    index.upsert_class(GPU_CLASS)
    index.upsert_class(NIC_CLASS)
    return index


def test_a_template_of_gpu_nic_pairs_asks_for_both_kinds(index: DraIndex) -> None:
    template = load("dranet-nvidia-template-v1.yaml")[0]
    template["metadata"]["namespace"] = "default"
    index.upsert_template(template)
    selectors = Selectors()
    demand = pod_demand(
        pod("p", [{"name": "pairs", "resourceClaimTemplateName": "2-gpu-nic-aligned"}]),
        index,
        selectors,
    )
    label = "default/2-gpu-nic-aligned"
    index_rule = 'device.attributes["gpu.nvidia.com"].index <= 2'
    assert demand == PodDemand(
        (
            DeviceRequest(label, "gpu", (Choice("gpu", (GPU_SELECTOR, index_rule), False, 2),)),
            DeviceRequest(label, "nic", (Choice("nic", (NIC_SELECTOR, RDMA), False, 2),)),
        ),
        constraints=(Constraint(label, "resource.kubernetes.io/pcieRoot", ()),),
    )
    assert (demand.count("gpu"), demand.count("nic")) == (2, 2)
    result = allocate(demand, "n1", index.node("n1"), selectors)
    assert result == Allocation(
        {
            (label, "gpu"): (("gpu.nvidia.com", "n1", "gpu-0"), ("gpu.nvidia.com", "n1", "gpu-1")),
            (label, "nic"): (
                ("dra.net", "n1", "pci-0000-20-00-0"),
                ("dra.net", "n1", "pci-0000-21-00-0"),
            ),
        }
    )


def test_the_selectors_narrow_the_devices_a_request_can_take(index: DraIndex) -> None:
    selectors = Selectors()
    # Only GPUs 0-2 match; two of them are held.
    held = [("gpu.nvidia.com", "n1", "gpu-0"), ("gpu.nvidia.com", "n1", "gpu-1")]
    index.upsert_claim(claim("other", [], allocated=held))
    rule = 'device.attributes["gpu.nvidia.com"].index <= 2'
    index.upsert_claim(claim("mine", [exactly("g", "gpu.nvidia.com", 2, rule)]))
    demand = pod_demand(pod("p", [{"name": "g", "resourceClaimName": "mine"}]), index, selectors)
    assert allocate(demand, "n1", index.node("n1"), selectors) == Refusal(
        "claim default/mine request g: 1 of 3 matching GPU(s) free, needs 2", True
    )
    assert isinstance(allocate(demand, "n2", index.node("n2"), selectors), Allocation)
    too_many = pod_demand(
        pod("q", [{"name": "g", "resourceClaimName": "big"}]),
        _with(index, claim("big", [exactly("g", "gpu.nvidia.com", 4, rule)])),
        selectors,
    )
    assert allocate(too_many, "n2", index.node("n2"), selectors) == Refusal(
        "claim default/big request g: node publishes 3 matching GPU(s), needs 4", False
    )


def _with(index: DraIndex, obj: dict[str, object]) -> DraIndex:
    index.upsert_claim(obj)
    return index


def test_allocation_mode_all_takes_every_matching_device_only_when_all_are_free(
    index: DraIndex,
) -> None:
    selectors = Selectors()
    spec = load("dranet-claims-allocated-v1.yaml")[0]["spec"]
    index.upsert_claim(claim("all", spec["devices"]["requests"]))
    demand = pod_demand(pod("p", [{"name": "n", "resourceClaimName": "all"}]), index, selectors)
    found = allocate(demand, "n1", index.node("n1"), selectors)
    assert isinstance(found, Allocation)
    assert len(found.devices["default/all", "rdma-net-interface"]) == 8
    index.upsert_claim(claim("x", [], allocated=[("dra.net", "n2", "pci-0000-20-00-0")]))
    assert allocate(demand, "n2", index.node("n2"), selectors) == Refusal(
        "claim default/all request rdma-net-interface: 1 of 8 matching RDMA NICs in use (All)",
        True,
    )


def test_first_available_takes_the_first_choice_that_fits(index: DraIndex) -> None:
    selectors = Selectors()
    request = {
        "name": "g",
        "firstAvailable": [
            {"name": "eight", "deviceClassName": "gpu.nvidia.com", "count": 8},
            {"name": "four", "deviceClassName": "gpu.nvidia.com", "count": 4},
        ],
    }
    index.upsert_claim(claim("fa", [request]))
    held = [("gpu.nvidia.com", "n1", f"gpu-{i}") for i in range(3)]
    index.upsert_claim(claim("busy", [], allocated=held))
    demand = pod_demand(pod("p", [{"name": "g", "resourceClaimName": "fa"}]), index, selectors)
    found = allocate(demand, "n1", index.node("n1"), selectors)
    assert isinstance(found, Allocation)
    assert len(found.devices["default/fa", "g/four"]) == 4
    assert demand.count("gpu") == 8


def test_an_allocated_claim_ties_the_pod_to_its_node(index: DraIndex) -> None:
    selectors = Selectors()
    index.upsert_claim(claim("done", [], allocated=[("gpu.nvidia.com", "n2", "gpu-0")]))
    demand = pod_demand(pod("p", [{"name": "g", "resourceClaimName": "done"}]), index, selectors)
    assert demand == PodDemand(pinned=(("default/done", "n2"),))
    assert allocate(demand, "n1", index.node("n1"), selectors) == Refusal(
        "claim default/done is allocated on node n2", False
    )


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"name": "a", "resourceClaimName": "nope"},
            "ResourceClaim default/nope does not exist (yet)",
        ),
        (
            {"name": "a", "resourceClaimTemplateName": "t"},
            "ResourceClaimTemplate default/t does not exist",
        ),
    ],
)
def test_missing_objects_are_problems(index: DraIndex, entry: dict[str, str], problem: str) -> None:
    assert pod_demand(pod("p", [entry]), index, Selectors()).problems == (problem,)


def test_a_missing_class_and_a_broken_selector_are_problems(index: DraIndex) -> None:
    index.upsert_claim(
        claim("c", [exactly("a", "nope"), exactly("b", "gpu.nvidia.com", 1, "x ==")])
    )
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "c"}]), index, Selectors())
    assert demand.problems == (
        "claim default/c request a: DeviceClass 'nope' does not exist",
        "claim default/c request b: CEL selector 'x ==' does not compile: x ==",
    )


def test_a_generated_claim_is_read_once_it_exists(index: DraIndex) -> None:
    entry = {"name": "g", "resourceClaimTemplateName": "t"}
    owner = pod("p", [entry])
    owner["status"] = {"resourceClaimStatuses": [{"name": "g", "resourceClaimName": "p-g-x1"}]}
    index.upsert_claim(claim("p-g-x1", [], allocated=[("gpu.nvidia.com", "n1", "gpu-3")]))
    assert pod_demand(owner, index, Selectors()).pinned == (("default/p-g-x1", "n1"),)


def test_admin_access_and_other_devices_are_requests_too(index: DraIndex) -> None:
    """Every request is allocated on the node (allocator_stable.go allocateOne): an adminAccess
    request and one for devices that are neither GPUs nor NICs (kind None) are kept."""
    admin = exactly("a", "gpu.nvidia.com")
    admin["exactly"]["adminAccess"] = True
    index.upsert_class(
        {
            "metadata": {"name": "cpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.cpu"'}}]},
        }
    )
    index.upsert_claim(claim("c", [admin, exactly("b", "cpu")]))
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "c"}]), index, Selectors())
    assert [(r.request, r.choices[0].kind, r.choices[0].admin_access) for r in demand.requests] == [
        ("a", "gpu", True),
        ("b", None, False),
    ]
    assert demand.count("gpu") == 1
    found = allocate(demand, "n1", index.node("n1"), Selectors())
    assert found == Refusal(
        "claim default/c request b: node publishes 0 matching device(s), needs 1", False
    )


def test_selector_results_are_remembered_per_what_the_expression_can_see() -> None:
    selectors = Selectors()
    index = DraIndex()
    index.replace_slices([gpu_slice(f"n{i}") for i in range(50)])
    for name in index.nodes():
        node = index.node(name)
        assert node is not None
        assert all(
            selectors.matches([GPU_SELECTOR], d) for d, _ in node.devices if d.id not in node.held
        )
    assert len(selectors._results) == 1
    with pytest.raises(SelectorError, match="does not compile"):
        selectors.check("device.driver ==")


@pytest.mark.parametrize(
    ("own", "kinds"),
    [
        ((), (None,)),
        ((RDMA,), ("nic",)),
        (('device.attributes["dra.net"].rdma == false',), (None,)),
    ],
)
def test_a_class_taking_plain_netdevs_too_counts_as_a_nic_only_where_the_request_narrows_it(
    own: tuple[str, ...], kinds: tuple[str | None, ...]
) -> None:
    """dranet's bare class takes every interface: where the node publishes plain netdevs beside
    its RDMA NICs, the allocator may give either, so only a request that keeps RDMA NICs asks
    for one."""
    index = DraIndex()
    plain = slice_("n1-plain", "n1", "dra.net", [nic(8, rdma=False)], pool="n1-plain")
    index.replace_slices([gpu_slice("n1"), nic_slice("n1"), plain])
    index.upsert_class(NIC_CLASS)
    index.upsert_claim(claim("c", [exactly("n", "dranet", 1, *own)]))
    demand = pod_demand(pod("p", [{"name": "c", "resourceClaimName": "c"}]), index, Selectors())
    assert tuple(c.kind for r in demand.requests for c in r.choices) == kinds
