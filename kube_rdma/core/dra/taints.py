"""Device taints and the tolerations of requests (resource.k8s.io DeviceTaint and
DeviceToleration, k8s.io/api resource/v1 types.go), and DeviceTaintRules, which taint the
devices they select as if their slices did.

A device is not allocated to a request that does not tolerate each of its taints
(k8s.io/dynamic-resource-allocation structured/internal allocateDevice,
taintPreventsAllocation): in 1.34 every taint counts; from 1.35 only the effects NoSchedule
and NoExecute do, and `None` (new in 1.35) is ignored. A toleration tolerates a taint as a pod
toleration does (resourceclaim/devicetoleration.go ToleratesTaint): an empty effect matches
every effect, an empty key every key (with `Exists`), `Exists` every value, `Equal` (or no
operator) the same value. An `adminAccess` request is held to the same rule.

A taint API validation refuses (no key, an unknown effect) makes its slice count for nothing,
naming the field; a DeviceTaintRule it refuses taints nothing, and says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kube_rdma.core.objects import Json

EFFECTS = ("NoSchedule", "NoExecute", "None")
"""The effects API validation accepts (`None` from 1.35)."""
BLOCKING = frozenset({"NoSchedule", "NoExecute"})
OPERATORS = ("Exists", "Equal")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str
    source: str = ""
    """Where it comes from when not the device's slice: `DeviceTaintRule <name>`."""

    def describe(self) -> str:
        value = f"={self.value}" if self.value else ""
        where = f" (from {self.source})" if self.source else ""
        return f"{self.key}{value}:{self.effect}{where}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator == "Equal" and self.value == taint.value


def untolerated(
    taints: Iterable[Taint], tolerations: Sequence[Toleration], minor: int
) -> Taint | None:
    """The first taint that keeps the device from a request with these tolerations, or None."""
    for taint in taints:
        if minor >= 35 and taint.effect not in BLOCKING:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def read_taints(raw: object, path: str) -> tuple[Taint, ...] | str:
    """A device's `taints`, or the first field validation refuses (`path` names the list)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return f"{path}: not a list"
    found = []
    for i, entry in enumerate(raw):
        taint = _taint(entry, f"{path}[{i}]")
        if isinstance(taint, str):
            return taint
        found.append(taint)
    return tuple(found)


def _taint(entry: object, path: str, source: str = "") -> Taint | str:
    if not isinstance(entry, dict):
        return f"{path}: not an object"
    key, effect = entry.get("key"), entry.get("effect")
    if not isinstance(key, str) or not key:
        return f"{path}.key: required"
    if effect not in EFFECTS:
        return f"{path}.effect {effect!r}: Unsupported value (one of {', '.join(EFFECTS)})"
    value = entry.get("value")
    return Taint(key, value if isinstance(value, str) else "", str(effect), source)


def read_tolerations(raw: object, path: str = "tolerations") -> tuple[Toleration, ...] | str:
    """A request's `tolerations`, or the first field validation refuses."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return f"{path}: not a list"
    found = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            return f"{path}[{i}]: not an object"
        operator = entry.get("operator") or "Equal"
        if operator not in OPERATORS:
            return f"{path}[{i}].operator {operator!r}: Unsupported value (Exists or Equal)"
        effect = entry.get("effect") or ""
        if effect and effect not in EFFECTS:
            return f"{path}[{i}].effect {effect!r}: Unsupported value (one of {', '.join(EFFECTS)})"
        key, value = entry.get("key") or "", entry.get("value") or ""
        if not key and operator != "Exists":
            return f"{path}[{i}].operator: must be Exists when key is empty"
        found.append(Toleration(str(key), str(operator), str(value), str(effect)))
    return tuple(found)


@dataclass(frozen=True)
class TaintRule:
    """A DeviceTaintRule: its taint on every device of the driver, pool and name it sets."""

    name: str
    driver: str | None
    pool: str | None
    device: str | None
    taint: Taint

    def selects(self, driver: str, pool: str, device: str) -> bool:
        return (
            (self.driver is None or self.driver == driver)
            and (self.pool is None or self.pool == pool)
            and (self.device is None or self.device == device)
        )


def read_rule(obj: Json) -> TaintRule | str:
    """A DeviceTaintRule (resource.k8s.io v1alpha3 in 1.33-1.35, v1beta2 in 1.36, v1 from
    1.37), or why it taints nothing: no selector (it selects no device), a selector by class
    or CEL (v1alpha3 before 1.35 only, dropped since: not evaluated here), or a refused taint."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    spec = obj.get("spec") or {}
    selector = spec.get("deviceSelector")
    if not isinstance(selector, dict):
        return f"DeviceTaintRule {name}: spec.deviceSelector: none, so it selects no device"
    for dropped in ("deviceClassName", "selectors"):
        if selector.get(dropped):
            return (
                f"DeviceTaintRule {name}: spec.deviceSelector.{dropped}: not evaluated "
                "(removed from the API in 1.35)"
            )
    taint = _taint(spec.get("taint"), "spec.taint", f"DeviceTaintRule {name}")
    if isinstance(taint, str):
        return f"DeviceTaintRule {name}: {taint}"
    return TaintRule(
        name,
        _optional(selector, "driver"),
        _optional(selector, "pool"),
        _optional(selector, "device"),
        taint,
    )


def _optional(selector: Json, field: str) -> str | None:
    value = selector.get(field)
    return str(value) if value else None
