"""The builders of Kubernetes' allocator test table (k8s.io/dynamic-resource-allocation,
structured/internal/allocatortesting/allocator_testing.go: `class`, `claim`,
`claimWithRequests`, `request`, `subRequest`, `requestWithPrioritizedList`, `slice`,
`sliceWithOneDevice`, `device`, `deviceAllocationResult`), writing resource.k8s.io/v1 objects
as JSON, so that each translated case reads as its upstream original."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kube_rdma.core.objects import Json

NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2, REQ3 = "req-0", "req-1", "req-2", "req-3"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2 = "slice-1", "slice-2"
DEVICE0, DEVICE1, DEVICE2, DEVICE3, DEVICE4 = (f"device-{i}" for i in range(5))
INT_ATTRIBUTE = f"{DRIVER_A}/numa"
STRING_ATTRIBUTE = f"{DRIVER_A}/stringAttribute"
BOOL_ATTRIBUTE = f"{DRIVER_A}/boolAttribute"
VERSION_ATTRIBUTE = f"{DRIVER_A}/driverVersion"
MISSING_ATTRIBUTE = f"{DRIVER_A}/NonExistentAttribute"

NONE: tuple[()] = ()
"""An expected outcome: no allocation, and no error."""
ERROR = "error"
"""An expected outcome: the allocator returns an error."""


def cel(expression: str) -> Json:
    return {"cel": {"expression": expression}}


def class_(name: str, driver: str) -> Json:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [cel(f'device.driver == "{driver}"')]},
    }


def request(name: str, device_class: str, count: int = 1, *selectors: Json, **extra: Any) -> Json:
    exactly: Json = {"allocationMode": "ExactCount", "deviceClassName": device_class}
    exactly["count"] = count
    if selectors:
        exactly["selectors"] = list(selectors)
    return {"name": name, "exactly": {**exactly, **extra}}


def all_request(name: str, device_class: str, **extra: Any) -> Json:
    return {
        "name": name,
        "exactly": {"allocationMode": "All", "deviceClassName": device_class, **extra},
    }


def sub_request(
    name: str, device_class: str, count: int = 1, *selectors: Json, **extra: Any
) -> Json:
    sub: Json = {"name": name, "allocationMode": "ExactCount", "deviceClassName": device_class}
    sub["count"] = count
    if selectors:
        sub["selectors"] = list(selectors)
    return {**sub, **extra}


def prioritized(name: str, *subrequests: Json) -> Json:
    return {"name": name, "firstAvailable": list(subrequests)}


def claim_with_requests(name: str, constraints: list[Json] | None, *requests: Json) -> Json:
    devices: Json = {"requests": [copy.deepcopy(r) for r in requests]}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": devices},
    }


def claim(name: str, req: str, device_class: str, *constraints: Json) -> Json:
    return claim_with_requests(name, list(constraints), request(req, device_class, 1))


def match(attribute: str, *requests: str) -> Json:
    found: Json = {"matchAttribute": attribute}
    if requests:
        found["requests"] = list(requests)
    return found


def device(
    name: str, capacity: dict[str, str] | None = None, attributes: dict[str, Json] | None = None
) -> Json:
    found: Json = {"name": name}
    if attributes:
        found["attributes"] = attributes
    if capacity:
        found["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    return found


def slice_(
    name: str, node: str, pool: str, driver: str, *devices: Json, **pool_fields: Any
) -> Json:
    spec: Json = {
        "driver": driver,
        "nodeName": node,
        "pool": {"name": pool, "resourceSliceCount": 1, "generation": 1, **pool_fields},
    }
    if devices:
        spec["devices"] = list(devices)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec,
    }


def one_device(name: str, node: str, pool: str, driver: str, **pool_fields: Any) -> Json:
    return slice_(name, node, pool, driver, device(DEVICE1), **pool_fields)


def many_devices(name: str, node: str, pool: str, driver: str, count: int) -> Json:
    return slice_(name, node, pool, driver, *(device(f"device-{i}") for i in range(count)))


Result = tuple[str, str, str, str, bool]
"""(request, driver, pool, device, adminAccess), as deviceAllocationResult."""


def result(request: str, driver: str, pool: str, name: str, admin: bool = False) -> Result:
    return request, driver, pool, name, admin


def results(request: str, driver: str, pool: str, count: int, start: int = 0) -> list[Result]:
    """multipleDeviceAllocationResults."""
    return [result(request, driver, pool, f"device-{i}") for i in range(start, start + count)]


@dataclass(frozen=True)
class Case:
    """One case of the upstream table: its objects and what the allocator returns: a list of
    results per claim, NONE, or ERROR."""

    name: str
    claims: list[Json] = field(default_factory=list)
    classes: list[Json] = field(default_factory=list)
    slices: list[Json] = field(default_factory=list)
    allocated: list[tuple[str, str, str]] = field(default_factory=list)
    node: str = NODE1
    expect: Any = NONE
    features: dict[str, bool] = field(default_factory=dict)
    """The allocator features the case turns on or off (`DeviceTaints`, ...): the harness
    runs it with the version's gates so set (kube_rdma/core/dra/gates.py)."""
    by_version: dict[str, Any] = field(default_factory=dict)
    """Version key -> the outcome where that version's table expects another, or the Case
    as that version writes it where it changed the objects too."""


@dataclass(frozen=True)
class LeftOut:
    name: str
    why: str
