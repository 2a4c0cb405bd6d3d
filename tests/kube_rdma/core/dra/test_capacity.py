"""Consumable capacity: a NIC that allows multiple allocations shares its bandwidth between
claims, each consuming what its request's `capacity` asks rounded up to the NIC's
requestPolicy (k8s.io/dynamic-resource-allocation structured/internal/incubating/
consumable_capacity.go), and input API validation would refuse is refused whole, naming the
field and why."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from kube_rdma.core.dra.allocate import Allocation, Refusal, allocate
from kube_rdma.core.dra.capacity import (
    Capacity,
    CapacityError,
    Policy,
    consumed,
    read_capacity,
    why_not,
)
from kube_rdma.core.dra.demand import pod_demand
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import Selectors
from tests.kube_rdma.core.dra.fixtures import claim, device_class, exactly, pod, slice_

NIC = "dra.net"
NIC_ID = (NIC, "n1", "eth1")
BANDWIDTH = {
    "value": "200G",
    "requestPolicy": {"default": "10G", "validRange": {"min": "10G", "step": "10G"}},
}


def shared_nic(capacity: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": "eth1",
        "allowMultipleAllocations": True,
        "capacity": {"bandwidth": capacity or BANDWIDTH},
    }


def bandwidth(name: str, amount: str | int | None) -> dict[str, Any]:
    request = exactly("nic", "shared-nic")
    if amount is not None:
        request["exactly"]["capacity"] = {"requests": {"bandwidth": amount}}
    return claim(name, [request])


def cluster(*devices: dict[str, Any]) -> DraIndex:
    index = DraIndex()
    index.replace_slices([slice_("n1-nic", "n1", NIC, list(devices) or [shared_nic()])])
    index.upsert_class(device_class("shared-nic", "device.driver == 'dra.net'"))
    return index


def allocate_on(index: DraIndex, *names: str) -> Allocation | Refusal:
    selectors = Selectors()
    entries = [{"name": n, "resourceClaimName": n} for n in names]
    demand = pod_demand(pod("p", entries), index, selectors)
    assert demand.problems == ()
    return allocate(demand, "n1", index.node("n1"), selectors)


def holding(name: str, amount: str) -> dict[str, Any]:
    obj = claim(name, [exactly("nic", "shared-nic")], allocated=[NIC_ID])
    result = obj["status"]["allocation"]["devices"]["results"][0]
    result.update({"shareID": f"{name}-share", "consumedCapacity": {"bandwidth": amount}})
    return obj


def test_two_claims_share_a_nic_each_consuming_its_bandwidth_rounded_up_to_the_step() -> None:
    index = cluster()
    index.upsert_claim(bandwidth("a", "25G"))
    index.upsert_claim(bandwidth("b", None))
    found = allocate_on(index, "a", "b")
    assert found == Allocation(
        {("default/a", "nic"): (NIC_ID,), ("default/b", "nic"): (NIC_ID,)},
        {
            ("default/a", "nic", NIC_ID): {"bandwidth": Decimal("30e9")},
            ("default/b", "nic", NIC_ID): {"bandwidth": Decimal("10e9")},
        },
    )


def test_what_allocated_claims_consume_counts_and_the_refusal_says_what_is_left() -> None:
    index = cluster()
    index.upsert_claim(holding("running", "180G"))
    index.upsert_claim(bandwidth("a", "30G"))
    found = allocate_on(index, "a")
    assert found == Refusal(
        "claim default/a request nic: no matching device has the capacity asked: on eth1, "
        "capacity bandwidth: 30000000000 asked, 20000000000 of 200000000000 left",
        resolvable=True,
    )
    index.upsert_claim(bandwidth("b", "20G"))
    assert isinstance(allocate_on(index, "b"), Allocation)


def test_a_request_outside_the_policy_skips_the_device_and_says_so() -> None:
    capped = {**BANDWIDTH, "requestPolicy": {"validValues": ["10G", "100G"]}}
    index = cluster(shared_nic(capped))
    index.upsert_claim(bandwidth("a", "150G"))
    assert allocate_on(index, "a") == Refusal(
        "claim default/a request nic: no matching device has the capacity asked: on eth1, "
        "capacity bandwidth: 150000000000 is outside its requestPolicy",
        resolvable=False,
    )


@pytest.mark.parametrize(
    ("amount", "problem"),
    [
        ("-1G", "capacity.requests[bandwidth]: '-1G' must not be negative"),
        ("fast", "capacity.requests[bandwidth]: 'fast' is not a Kubernetes quantity"),
        (True, "capacity.requests[bandwidth]: True is not a quantity"),
    ],
)
def test_a_capacity_request_that_is_no_quantity_fails_every_node(
    amount: object, problem: str
) -> None:
    index = cluster()
    index.upsert_claim(bandwidth("a", amount))  # type: ignore[arg-type]
    demand = pod_demand(pod("p", [{"name": "a", "resourceClaimName": "a"}]), index, Selectors())
    assert problem in demand.problems[0]
    assert demand.problems[0].startswith("claim default/a request nic: ")
    assert demand.requests == ()


@pytest.mark.parametrize(
    ("capacity", "problem"),
    [
        ({"value": "-5"}, "capacity[bandwidth].value: '-5' must not be negative"),
        ({"value": "lots"}, "capacity[bandwidth].value: 'lots' is not a Kubernetes quantity"),
        (
            {"value": "10", "requestPolicy": {"validRange": {"step": "1"}}},
            "capacity[bandwidth].requestPolicy.validRange.min: required",
        ),
        (
            {"value": "10", "requestPolicy": {"default": "3", "validValues": ["1", "2"]}},
            "capacity[bandwidth].requestPolicy.default: must be one of validValues",
        ),
        (
            {"value": "10", "requestPolicy": {"validValues": ["2", "1"]}},
            "requestPolicy.validValues: must be sorted ascending, no duplicates",
        ),
    ],
)
def test_a_device_capacity_api_validation_refuses_refuses_its_slice(
    capacity: dict[str, Any], problem: str
) -> None:
    index = cluster(shared_nic(capacity))
    node = index.node("n1")
    assert node is not None
    assert node.published == ()
    assert len(node.notes) == 1
    assert problem in node.notes[0]
    assert node.notes[0].startswith(
        "ResourceSlice n1-nic is refused: spec.devices[0]: device eth1."
    )


def test_consumed_fills_a_missing_request_with_the_default_else_the_whole_capacity() -> None:
    capacities = {
        "a": Capacity(Decimal(8), Policy(default=Decimal(2))),
        "b": Capacity(Decimal(8)),
    }
    assert consumed({}, capacities) == {"a": Decimal(2), "b": Decimal(8)}
    assert why_not({"c": Decimal(1)}, capacities) == "capacity c: the device has none"


def test_a_bare_quantity_reads_as_a_capacity_without_policy() -> None:
    assert read_capacity("40Gi", "x") == Capacity(Decimal(40 * 2**30))
    with pytest.raises(CapacityError, match="x: None is not a quantity"):
        read_capacity(None, "x")
