"""The resource.k8s.io objects in the three served versions, read into one form.

v1 (Kubernetes 1.34) and v1beta2 (1.33) nest an exact request under `exactly`; v1beta1 (1.32)
has its fields (`deviceClassName`, `selectors`, `allocationMode`, `count`, `adminAccess`) on
the request itself, and wraps each slice device's fields in `basic`. Both carry
`firstAvailable` for a list of alternatives (k8s.io/api resource/v1 and v1beta1 types.go).
Attribute names without a domain belong to the publishing driver's domain (DeviceAttribute,
"The name ... is a C identifier ... prefixed by the driver's domain when unqualified").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from kube_rdma.core.dra.binding import NO_BINDING, Binding, BindingError, read_binding
from kube_rdma.core.dra.capacity import Capacity, CapacityError, read_capacity
from kube_rdma.core.dra.capacity import read_requests as read_capacity_requests
from kube_rdma.core.dra.counters import Consumption
from kube_rdma.core.dra.taints import Taint, Toleration, read_tolerations
from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import QuantityError, parse_quantity


class Version(str):
    """A `version` attribute's value (a semantic version): compared as a version by CEL, and
    never equal to a string attribute of the same text in a `matchAttribute` constraint."""

    __slots__ = ()


AttributeValue = str | int | bool
DeviceId = tuple[str, str, str]
"""(driver, pool, device): how a claim's allocation names a device."""


@dataclass(frozen=True)
class Device:
    driver: str
    pool: str
    name: str
    attributes: Mapping[str, AttributeValue]
    """By fully qualified name (`domain/id`)."""
    capacity: Mapping[str, int] = field(default_factory=dict)
    multi: bool = False
    """`allowMultipleAllocations`: several claims may share it (kube_rdma/core/dra/capacity.py)."""
    capacities: Mapping[str, Capacity] = field(default_factory=dict)
    """Exact, with their request policies, by name as published."""
    binding: Binding = NO_BINDING
    problem: str = ""
    """What API validation refuses in it (a capacity that is no quantity, a binding
    condition of the wrong shape): its slice then counts for nothing."""
    taints: tuple[Taint, ...] = ()
    """Its slice's and the DeviceTaintRules' (kube_rdma/core/dra/taints.py)."""
    consumes: tuple[Consumption, ...] = ()
    """The counters it consumes (kube_rdma/core/dra/counters.py)."""

    @property
    def id(self) -> DeviceId:
        return self.driver, self.pool, self.name


@dataclass(frozen=True)
class Selection:
    """One way to satisfy a request: a DeviceClass, CEL selectors, how many."""

    device_class: str
    selectors: tuple[str, ...]
    all_devices: bool
    """allocationMode All: every matching device of the node."""
    count: int
    admin_access: bool = False
    tolerations: tuple[Toleration, ...] = ()
    problem: str = ""
    """What API validation or the allocator refuses in it (an unknown allocationMode, a
    selector without CEL), or empty."""
    capacity: Mapping[str, Decimal] | None = None
    """`capacity.requests`, by name as written; None where the request has no `capacity`."""


@dataclass(frozen=True)
class Request:
    name: str
    alternatives: tuple[Selection, ...]
    """One for an exact request; the `firstAvailable` subrequests in order otherwise."""


def qualified(driver: str, name: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def read_devices(slice_: Json) -> list[Device]:
    spec = slice_.get("spec") or {}
    driver = str(spec.get("driver") or "")
    pool = str((spec.get("pool") or {}).get("name") or "")
    return [_device(driver, pool, raw) for raw in spec.get("devices") or []]


def _device(driver: str, pool: str, raw: Json) -> Device:
    basic = raw.get("basic")
    body: Json = basic if isinstance(basic, dict) else raw
    attributes = {
        qualified(driver, name): value
        for name, wrapped in (body.get("attributes") or {}).items()
        if (value := _attribute(wrapped)) is not None
    }
    capacity = {
        qualified(driver, name): amount
        for name, wrapped in (body.get("capacity") or {}).items()
        if (amount := _capacity(wrapped)) is not None
    }
    name = str(raw.get("name") or "")
    where = f"device {name}"
    try:
        capacities = {
            str(n): read_capacity(c, f"{where}.capacity[{n}]")
            for n, c in (body.get("capacity") or {}).items()
        }
        binding = read_binding(body, where)
    except (CapacityError, BindingError) as e:
        return Device(driver, pool, name, attributes, capacity, problem=str(e))
    multi = body.get("allowMultipleAllocations")
    if multi is not None and not isinstance(multi, bool):
        problem = f"{where}.allowMultipleAllocations: {multi!r} is not a bool"
        return Device(driver, pool, name, attributes, capacity, problem=problem)
    return Device(driver, pool, name, attributes, capacity, bool(multi), capacities, binding)


_SCALARS = (str, int, bool)


def _attribute(wrapped: Any) -> AttributeValue | None:
    """The value of a DeviceAttribute: exactly one of string, int, bool and version is set."""
    if not isinstance(wrapped, dict) or len(wrapped) != 1:
        return None
    [(key, value)] = wrapped.items()
    if key == "version" and isinstance(value, str):
        return Version(value)
    if key in _KINDS and isinstance(value, _SCALARS):
        return value
    return None


_KINDS = frozenset({"string", "int", "bool", "version"})


def _capacity(wrapped: Any) -> int | None:
    value = wrapped.get("value") if isinstance(wrapped, dict) else wrapped
    try:
        return int(parse_quantity(value))
    except (QuantityError, TypeError, ValueError):
        return None


def read_requests(claim_spec: Json) -> list[Request]:
    """The requests of a ResourceClaim's spec (or a template's `spec.spec`)."""
    devices = claim_spec.get("devices") or {}
    return [_request(raw) for raw in devices.get("requests") or [] if isinstance(raw, dict)]


def _request(raw: Json) -> Request:
    name = str(raw.get("name") or "")
    if isinstance(raw.get("exactly"), dict):
        return Request(name, (_selection(raw["exactly"]),))
    if raw.get("firstAvailable"):
        return Request(name, tuple(_selection(sub) for sub in raw["firstAvailable"]))
    return Request(name, (_selection(raw),))  # v1beta1: the request is the exact request


def _selection(raw: Json) -> Selection:
    mode = raw.get("allocationMode") or "ExactCount"
    all_devices = mode == "All"
    count = raw.get("count")
    tolerations = read_tolerations(raw.get("tolerations"))
    problem = tolerations if isinstance(tolerations, str) else _selection_problem(raw, mode)
    requested = None
    if raw.get("capacity") is not None:
        try:
            requested = read_capacity_requests(raw["capacity"], "capacity")
        except CapacityError as e:
            problem = problem or str(e)
    return Selection(
        device_class=str(raw.get("deviceClassName") or ""),
        selectors=cel_expressions(raw.get("selectors")),
        all_devices=all_devices,
        count=0 if all_devices else count if isinstance(count, int) and count > 0 else 1,
        admin_access=bool(raw.get("adminAccess")),
        tolerations=tolerations if isinstance(tolerations, tuple) else (),
        problem=problem,
        capacity=requested,
    )


def _selection_problem(raw: Json, mode: object) -> str:
    """The first field API validation or the allocator refuses (k8s.io/api resource/v1
    ExactDeviceRequest; allocator_stable.go validateDeviceRequest: "unsupported count mode",
    "CEL expression empty (unsupported selector type?)", "missing device class name")."""
    if mode not in ("ExactCount", "All"):
        return f"allocationMode {mode!r}: unsupported count mode (ExactCount or All)"
    count = raw.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        return f"count {count!r}: not an integer"
    if mode == "All" and count:
        return "count: must not be set with allocationMode All"
    if mode == "ExactCount" and isinstance(count, int) and count < 0:
        return f"count {count}: must be greater than zero"
    if not raw.get("deviceClassName"):
        return "deviceClassName: missing device class name"
    return selectors_problem(raw.get("selectors"))


def selectors_problem(selectors: Any) -> str:
    """Why a `selectors` list is refused, or empty: each entry must be a CEL selector with an
    expression (allocator_stable.go: "CEL expression empty (unsupported selector type?)")."""
    if selectors is not None and not isinstance(selectors, list):
        return "selectors: not a list"
    for i, selector in enumerate(selectors or []):
        cel = selector.get("cel") if isinstance(selector, dict) else None
        if not isinstance(cel, dict) or not isinstance(cel.get("expression"), str):
            return f"selectors[{i}]: CEL expression empty (unsupported selector type?)"
        if not cel["expression"]:
            return f"selectors[{i}].cel.expression: empty"
    return ""


def cel_expressions(selectors: Any) -> tuple[str, ...]:
    return tuple(
        str(s["cel"]["expression"])
        for s in selectors or []
        if isinstance(s, dict) and isinstance(s.get("cel"), dict) and s["cel"].get("expression")
    )


def allocated_devices(claim: Json) -> list[tuple[DeviceId, bool]]:
    """The devices a claim's `status.allocation` names, each with its adminAccess flag."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return [(_device_id(r), bool(r.get("adminAccess"))) for r in results if isinstance(r, dict)]


def _device_id(result: Json) -> DeviceId:
    return str(result.get("driver")), str(result.get("pool")), str(result.get("device"))


def reserved_for(claim: Json) -> list[str]:
    """The UIDs of the pods the claim is reserved for (`status.reservedFor`)."""
    return [
        str(ref.get("uid"))
        for ref in (claim.get("status") or {}).get("reservedFor") or []
        if isinstance(ref, dict) and ref.get("resource") == "pods"
    ]
