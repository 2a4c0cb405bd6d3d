"""Consumable capacity (DRAConsumableCapacity: alpha in Kubernetes 1.34, beta and on by
default from 1.36): a device with `allowMultipleAllocations` may be allocated to several
claims at once, each consuming part of its `capacity` (a NIC's bandwidth, a GPU's memory).

As kube-scheduler's allocator reads it (k8s.io/dynamic-resource-allocation structured/
internal/incubating/consumable_capacity.go CmpRequestOverCapacity, calculateConsumedCapacity,
violatesPolicy): a request's `capacity.requests` names amounts; for each capacity of the device
the amount consumed is the request's, rounded up to the `requestPolicy` (the next step of a
`validRange` from its `min`, the next of `validValues`), or without a request the policy's
`default`, else the whole capacity. A request naming a capacity the device lacks, an amount
the policy refuses (over `validRange.max`, off its step, not one of `validValues`) or an amount
past what is left of the capacity skips the device. What allocated claims consume is read
from their results that carry a `shareID` (k8s.io/kubernetes pkg/scheduler/framework/plugins/
dynamicresources: a result without one holds its device whole).

Bad input is refused whole, with the field and why: a capacity or request that is not a
quantity or is negative, a policy whose `default` it refuses itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import QuantityError, parse_quantity

Amounts = Mapping[str, Decimal]
"""By capacity name as the slice or request writes it (the allocator compares the names as
written)."""


class CapacityError(ValueError):
    """A capacity, policy or capacity request API validation would refuse: the field, why."""


@dataclass(frozen=True)
class Policy:
    """A capacity's `requestPolicy`: at most one of `valid_range` and `valid_values`."""

    default: Decimal | None = None
    valid_values: tuple[Decimal, ...] = ()
    minimum: Decimal | None = None
    maximum: Decimal | None = None
    step: Decimal | None = None

    @property
    def has_range(self) -> bool:
        return self.minimum is not None


@dataclass(frozen=True)
class Capacity:
    value: Decimal
    policy: Policy | None = None


def quantity(value: Any, field: str) -> Decimal:
    """A quantity of 0 or more, or CapacityError naming `field`."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise CapacityError(f"{field}: {value!r} is not a quantity")
    try:
        amount = parse_quantity(value)
    except QuantityError as e:
        raise CapacityError(f"{field}: {e}") from e
    if amount < 0:
        raise CapacityError(f"{field}: {value!r} must not be negative")
    return amount


def read_capacity(raw: Any, field: str) -> Capacity:
    """A slice device's DeviceCapacity (`{value, requestPolicy}`, or a bare quantity)."""
    if not isinstance(raw, dict):
        return Capacity(quantity(raw, field))
    value = quantity(raw.get("value"), f"{field}.value")
    policy = raw.get("requestPolicy")
    if policy is None:
        return Capacity(value)
    return Capacity(value, _policy(policy, f"{field}.requestPolicy"))


def _policy(raw: Any, field: str) -> Policy:
    if not isinstance(raw, dict):
        raise CapacityError(f"{field}: not an object")
    default = raw.get("default")
    amount = None if default is None else quantity(default, f"{field}.default")
    values, span = raw.get("validValues"), raw.get("validRange")
    if values is not None and span is not None:
        raise CapacityError(f"{field}: set at most one of validValues and validRange")
    if values is not None:
        if not isinstance(values, list) or not values:
            raise CapacityError(f"{field}.validValues: must be a non-empty list")
        found = tuple(quantity(v, f"{field}.validValues[{i}]") for i, v in enumerate(values))
        if list(found) != sorted(set(found)):
            raise CapacityError(f"{field}.validValues: must be sorted ascending, no duplicates")
        if amount is not None and amount not in found:
            raise CapacityError(f"{field}.default: must be one of validValues")
        return Policy(amount, valid_values=found)
    if span is not None:
        return _range(span, amount, f"{field}.validRange")
    return Policy(amount)


def _range(raw: Any, default: Decimal | None, field: str) -> Policy:
    if not isinstance(raw, dict) or raw.get("min") is None:
        raise CapacityError(f"{field}.min: required")
    low = quantity(raw["min"], f"{field}.min")
    high = None if raw.get("max") is None else quantity(raw["max"], f"{field}.max")
    step = None if raw.get("step") is None else quantity(raw["step"], f"{field}.step")
    if step == 0:
        raise CapacityError(f"{field}.step: must be greater than zero")
    if high is not None and high < low:
        raise CapacityError(f"{field}.max: must not be below min")
    policy = Policy(default, minimum=low, maximum=high, step=step)
    if default is not None and (default < low or _violates(default, policy)):
        raise CapacityError(f"{field[: -len('.validRange')]}.default: outside validRange")
    return policy


def read_requests(raw: Any, field: str) -> dict[str, Decimal]:
    """A request's `capacity` (CapacityRequirements): its `requests`, by name as written; the
    allocator matches them to a device's capacities by that name as published."""
    if not isinstance(raw, dict):
        raise CapacityError(f"{field}: not an object")
    requests = raw.get("requests") or {}
    if not isinstance(requests, dict):
        raise CapacityError(f"{field}.requests: not a map")
    return {str(k): quantity(v, f"{field}.requests[{k}]") for k, v in requests.items()}


def consumed(requested: Amounts, capacities: Mapping[str, Capacity]) -> dict[str, Decimal]:
    """What one allocation of the device consumes of each of its capacities
    (GetConsumedCapacityFromRequest)."""
    return {name: _consumed(requested.get(name), cap) for name, cap in capacities.items()}


def fits(
    requested: Amounts, capacities: Mapping[str, Capacity], taken: Amounts | None = None
) -> bool:
    """Whether one more allocation fits the device beside `taken` (CmpRequestOverCapacity)."""
    return not why_not(requested, capacities, taken)


def why_not(
    requested: Amounts, capacities: Mapping[str, Capacity], taken: Amounts | None = None
) -> str:
    """Why one more allocation does not fit the device beside `taken`, or empty."""
    for name in requested:
        if name not in capacities:
            return f"capacity {name}: the device has none"
    for name, cap in capacities.items():
        amount = _consumed(requested.get(name), cap)
        if cap.policy is not None and _violates(amount, cap.policy):
            return f"capacity {name}: {_text(amount)} is outside its requestPolicy"
        left = cap.value - (taken or {}).get(name, Decimal(0))
        if amount > left:
            return (
                f"capacity {name}: {_text(amount)} asked, {_text(left)} of {_text(cap.value)} left"
            )
    return ""


def _text(amount: Decimal) -> str:
    return f"{amount.normalize():f}"


def add(total: Amounts, more: Amounts) -> dict[str, Decimal]:
    summed = dict(total)
    for name, amount in more.items():
        summed[name] = summed.get(name, Decimal(0)) + amount
    return summed


def _consumed(requested: Decimal | None, cap: Capacity) -> Decimal:
    policy = cap.policy
    if requested is None:
        return policy.default if policy and policy.default is not None else cap.value
    if policy is None:
        return requested
    if policy.has_range:
        return _round_up_range(requested, policy)
    if policy.valid_values:
        return next((v for v in policy.valid_values if requested <= v), requested)
    return requested


def _round_up_range(requested: Decimal, policy: Policy) -> Decimal:
    assert policy.minimum is not None
    if requested < policy.minimum:
        return policy.minimum
    if policy.step is None:
        return requested
    added = requested - policy.minimum
    steps = added // policy.step + (1 if added % policy.step else 0)
    return policy.minimum + policy.step * steps


def _violates(amount: Decimal, policy: Policy) -> bool:
    if policy.default is not None and amount == policy.default:
        return False
    if policy.has_range:
        assert policy.minimum is not None
        if policy.maximum is not None and amount > policy.maximum:
            return True
        return policy.step is not None and (amount - policy.minimum) % policy.step != 0
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def shared_results(claim: Json) -> list[tuple[tuple[str, str, str], dict[str, Decimal]]]:
    """The results of a claim's allocation that share their device (`shareID` set), each with
    what it consumes; an unreadable amount counts as nothing consumed."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    found = []
    for result in (allocation.get("devices") or {}).get("results") or []:
        if not isinstance(result, dict) or not result.get("shareID"):
            continue
        device = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
        amounts: dict[str, Decimal] = {}
        for name, value in (result.get("consumedCapacity") or {}).items():
            try:
                amounts[str(name)] = quantity(value, str(name))
            except CapacityError:
                continue
        found.append((device, amounts))
    return found
