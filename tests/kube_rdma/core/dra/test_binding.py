"""Binding conditions as a slice publishes them and a claim's status reports them
(k8s.io/api resource/v1 Device, DeviceRequestAllocationResult, AllocatedDeviceStatus): read
whole, or refused naming the field and why."""

from __future__ import annotations

from typing import Any

import pytest

from kube_rdma.core.dra.binding import (
    Binding,
    BindingError,
    Readiness,
    Verdict,
    claim_readiness,
    read_binding,
)
from kube_rdma.core.dra.index import DraIndex
from tests.kube_rdma.core.dra.fixtures import slice_


def test_a_device_with_binding_conditions_is_read_whole() -> None:
    raw = {"bindingConditions": ["Attached"], "bindingFailureConditions": ["Failed"]}
    assert read_binding({**raw, "bindsToNode": True}, "d") == Binding(
        ("Attached",), ("Failed",), True
    )


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"bindingConditions": "Attached"}, "d.bindingConditions: not a list"),
        ({"bindingConditions": ["a"] * 5}, "d.bindingConditions: 5 entries, at most 4"),
        ({"bindingConditions": ["not a type"]}, "d.bindingConditions[0]: 'not a type' is not"),
        ({"bindingFailureConditions": ["Failed"]}, "set without bindingConditions"),
        ({"bindingConditions": ["A"], "bindsToNode": "yes"}, "d.bindsToNode: 'yes' is not a bool"),
    ],
)
def test_a_binding_field_of_the_wrong_shape_is_refused(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(BindingError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        read_binding(raw, "d")


def test_a_slice_with_such_a_device_counts_for_nothing_and_says_why() -> None:
    index = DraIndex()
    device = {"name": "eth1", "bindingConditions": [7]}
    index.replace_slices([slice_("n1-nic", "n1", "dra.net", [device])])
    node = index.node("n1")
    assert node is not None
    assert node.notes == (
        "ResourceSlice n1-nic is refused: spec.devices[0]: device eth1.bindingConditions[0]: "
        "7 is not a condition type",
    )


def allocated(conditions: dict[str, str] | None) -> dict[str, Any]:
    device = {"driver": "dra.net", "pool": "n1", "device": "eth1"}
    result = {**device, "request": "nic", "bindingConditions": ["Attached"]}
    result["bindingFailureConditions"] = ["Failed"]
    status: dict[str, Any] = {"allocation": {"devices": {"results": [result]}}}
    if conditions is not None:
        entries = [{"type": t, "status": v} for t, v in conditions.items()]
        status["devices"] = [{**device, "conditions": entries}]
    return {"status": status}


@pytest.mark.parametrize(
    ("conditions", "verdict"),
    [
        (
            None,
            Verdict(
                Readiness.WAITING, "device dra.net/n1/eth1: binding condition Attached is not True"
            ),
        ),
        ({"Attached": "True"}, Verdict(Readiness.READY)),
        (
            {"Attached": "True", "Failed": "True"},
            Verdict(
                Readiness.FAILED, "device dra.net/n1/eth1: binding failure condition Failed is True"
            ),
        ),
    ],
)
def test_a_claim_is_ready_once_every_binding_condition_is_true(
    conditions: dict[str, str] | None, verdict: Verdict
) -> None:
    assert claim_readiness(allocated(conditions)) == verdict


def test_a_condition_without_a_type_is_refused() -> None:
    claim = allocated({"Attached": "True"})
    del claim["status"]["devices"][0]["conditions"][0]["type"]
    with pytest.raises(BindingError, match=r"status.devices\[0\].conditions\[0\].type: required"):
        claim_readiness(claim)
