"""The builders of Kubernetes' allocator test table for consumable capacity and binding
conditions (k8s.io/dynamic-resource-allocation, structured/internal/allocatortesting/
allocator_testing.go: `withCapacityRequest`, `withAllowMultipleAllocations`,
`withCapacityRequestPolicyRange`, `withCapacityRequestPolicyValidValues`,
`classWithAllowMultipleAllocations`, `withBindingConditions`, `withConsumedCapacity`,
`deviceRequestAllocationResultWithBindingConditions`), and a case that carries the allocator's
feature gates and the capacity allocated claims consume (`features`,
`allocatedCapacityDevices`)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kube_rdma.core.objects import Json
from tests.kube_rdma.core.dra.upstream.builders import Case, Result, cel

CAPACITY0, CAPACITY1 = "capacity-0", "capacity-1"
ZERO, ONE, TWO, THREE, FOUR = "0", "1", "2", "3", "4"

CAPACITY = {"ConsumableCapacity": True, "DeviceBindingAndStatus": False}
"""`Features{ConsumableCapacity: true}` (other gates as they do not matter here)."""
BINDING = {"ConsumableCapacity": False, "DeviceBindingAndStatus": True}
"""`Features{DeviceBindingAndStatus: true}` (1.34: DeviceBinding and DeviceStatus)."""
NEITHER = {"ConsumableCapacity": False, "DeviceBindingAndStatus": False}


@dataclass(frozen=True)
class GatedCase(Case):
    """A case of these features: by default with ConsumableCapacity on (`features`,
    kube_rdma/core/dra/gates.py Gates.of)."""

    features: dict[str, bool] = field(default_factory=lambda: dict(CAPACITY))
    shared: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)
    """allocatedCapacityDevices: per device, what allocated claims consume of it."""


def with_capacity(request_or_sub: Json, amount: str | None) -> Json:
    """withCapacityRequest on a request or a subrequest: `capacity-0` of `amount`."""
    out = copy.deepcopy(request_or_sub)
    body = out.get("exactly", out)
    body["capacity"] = {"requests": {CAPACITY0: amount} if amount is not None else {}}
    return out


def multi(device_: Json) -> Json:
    return {**device_, "allowMultipleAllocations": True}


def policy_range(device_: Json, capacity: dict[str, str]) -> Json:
    """withCapacityRequestPolicyRange: default 2, validRange min 2, step 2, max 4."""
    caps = dict(device_.get("capacity") or {})
    for name, value in capacity.items():
        caps[name] = {
            "value": value,
            "requestPolicy": {
                "default": TWO,
                "validRange": {"min": TWO, "step": TWO, "max": FOUR},
            },
        }
    return {**device_, "capacity": caps}


def policy_values(device_: Json, default: str, capacity: dict[str, str], *more: str) -> Json:
    """withCapacityRequestPolicyValidValues: validValues the default, then `more`."""
    caps = dict(device_.get("capacity") or {})
    for name, value in capacity.items():
        caps[name] = {
            "value": value,
            "requestPolicy": {"default": default, "validValues": [default, *more]},
        }
    return {**device_, "capacity": caps}


def binding(device_: Json, conditions: list[str], failures: list[str]) -> Json:
    return {**device_, "bindingConditions": conditions, "bindingFailureConditions": failures}


def class_multi(name: str, driver: str, allowed: bool) -> Json:
    """classWithAllowMultipleAllocations."""
    expression = (
        f'device.driver == "{driver}" && device.allowMultipleAllocations == {str(allowed).lower()}'
    )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [cel(expression)]},
    }


def shared(request: str, driver: str, pool: str, name: str, consumed: dict[str, str]) -> Any:
    """deviceRequestAllocationResult(...).withConsumedCapacity(&fixedShareID, consumed): the
    result shares its device (a shareID) and consumes `consumed`."""
    extra = {"shareID": True, "consumedCapacity": dict(consumed)}
    return (request, driver, pool, name, False, extra)


def bound(
    request: str, driver: str, pool: str, name: str, conditions: list[str], failures: list[str]
) -> Any:
    """deviceRequestAllocationResultWithBindingConditions."""
    extra = {"bindingConditions": conditions, "bindingFailureConditions": failures}
    return (request, driver, pool, name, False, extra)


def plain(request: str, driver: str, pool: str, name: str) -> Result:
    return request, driver, pool, name, False
