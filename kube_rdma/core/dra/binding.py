"""Device binding conditions (DRADeviceBindingConditions: alpha in Kubernetes 1.34, beta and on
by default from 1.36): a device that must be readied after allocation (a fabric-attached GPU, a
NIC attached by a controller) lists `bindingConditions`; the allocation result copies them
with `bindingFailureConditions`, and kube-scheduler binds the pod only once every binding
condition is True in the claim's `status.devices` entry for the device, and gives the pod up
(to schedule again) when a failure condition is True or the wait passes its timeout
(k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources PreBind,
`bindingTimeout`). With the gate off, the allocator takes no device that has binding
conditions (allocator_incubating.go isSelectable).

This module only reads: what a slice's device asks, and where a claim's devices stand. A field
of the wrong shape is refused with the field and why, never half-read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from kube_rdma.core.objects import Json

MAX_CONDITIONS = 4
"""Per list, in every version that has the fields (k8s.io/api resource/v1 Device)."""
_CONDITION_TYPE = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


class BindingError(ValueError):
    """A binding field API validation would refuse, or a status of an unknown shape."""


@dataclass(frozen=True)
class Binding:
    conditions: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()
    binds_to_node: bool = False


NO_BINDING = Binding()


def read_binding(raw: Json, field: str) -> Binding:
    """A slice device's `bindingConditions`, `bindingFailureConditions` and `bindsToNode`."""
    conditions = _names(raw.get("bindingConditions"), f"{field}.bindingConditions")
    failures = _names(raw.get("bindingFailureConditions"), f"{field}.bindingFailureConditions")
    binds = raw.get("bindsToNode")
    if binds is not None and not isinstance(binds, bool):
        raise BindingError(f"{field}.bindsToNode: {binds!r} is not a bool")
    if failures and not conditions:
        raise BindingError(f"{field}.bindingFailureConditions: set without bindingConditions")
    if bool(binds) and not conditions:
        raise BindingError(f"{field}.bindsToNode: set without bindingConditions")
    if not conditions:
        return NO_BINDING
    return Binding(conditions, failures, bool(binds))


def _names(raw: Any, field: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BindingError(f"{field}: not a list")
    if len(raw) > MAX_CONDITIONS:
        raise BindingError(f"{field}: {len(raw)} entries, at most {MAX_CONDITIONS}")
    for i, name in enumerate(raw):
        if not isinstance(name, str) or not _CONDITION_TYPE.match(name) or len(name) > 316:
            raise BindingError(f"{field}[{i}]: {name!r} is not a condition type")
    return tuple(raw)


class Readiness(Enum):
    READY = "ready"
    """Every allocated device's binding conditions are True (or it has none)."""
    WAITING = "waiting"
    FAILED = "failed"
    """A failure condition is True: the pod is not bound, and is scheduled again."""


@dataclass(frozen=True)
class Verdict:
    readiness: Readiness
    reason: str = ""


def claim_readiness(claim: Json) -> Verdict:
    """Where an allocated claim's devices stand on their binding conditions. Raises
    BindingError on a result or status entry of an unknown shape."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    statuses = _statuses(claim)
    waiting = []
    for i, result in enumerate(results):
        field = f"status.allocation.devices.results[{i}]"
        if not isinstance(result, dict):
            raise BindingError(f"{field}: not an object")
        conditions = _names(result.get("bindingConditions"), f"{field}.bindingConditions")
        failures = _names(
            result.get("bindingFailureConditions"), f"{field}.bindingFailureConditions"
        )
        if not conditions:
            continue
        device = "/".join(str(result.get(k)) for k in ("driver", "pool", "device"))
        found = statuses.get(_key(result), {})
        failed = [c for c in failures if found.get(c) == "True"]
        if failed:
            return Verdict(
                Readiness.FAILED, f"device {device}: binding failure condition {failed[0]} is True"
            )
        missing = [c for c in conditions if found.get(c) != "True"]
        if missing:
            waiting.append(f"device {device}: binding condition {missing[0]} is not True")
    if waiting:
        return Verdict(Readiness.WAITING, "; ".join(waiting))
    return Verdict(Readiness.READY)


def _key(entry: Json) -> tuple[str, str, str, str]:
    return tuple(str(entry.get(k) or "") for k in ("driver", "pool", "device", "shareID"))  # type: ignore[return-value]


def _statuses(claim: Json) -> dict[tuple[str, str, str, str], dict[str, str]]:
    found: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for i, entry in enumerate((claim.get("status") or {}).get("devices") or []):
        field = f"status.devices[{i}]"
        if not isinstance(entry, dict):
            raise BindingError(f"{field}: not an object")
        conditions = entry.get("conditions") or []
        if not isinstance(conditions, list):
            raise BindingError(f"{field}.conditions: not a list")
        states = {}
        for j, condition in enumerate(conditions):
            if not isinstance(condition, dict) or not isinstance(condition.get("type"), str):
                raise BindingError(f"{field}.conditions[{j}].type: required")
            status = condition.get("status")
            if status not in ("True", "False", "Unknown"):
                raise BindingError(
                    f"{field}.conditions[{j}].status: {status!r} is not True, False or Unknown"
                )
            states[condition["type"]] = status
        found[_key(entry)] = states
    return found
