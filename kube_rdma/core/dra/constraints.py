"""The `constraints` of a ResourceClaim: which of its requests' devices must agree on an
attribute (`matchAttribute`) or differ in it (`distinctAttribute`, alpha in Kubernetes 1.34).

As kube-scheduler's allocator reads them (k8s.io/dynamic-resource-allocation/structured,
internal/stable/allocator_stable.go matchAttributeConstraint; internal/experimental/
constraint.go distinctAttributeConstraint): a constraint with no `requests` covers every
request of its claim; a name covers that request, `request/subrequest` one `firstAvailable`
choice of it. A device lacking the attribute fails the constraint; values compare with their
type (a string never equals a version of the same text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kube_rdma.core.dra.shapes import Device, Version
from kube_rdma.core.objects import Json

TypedValue = tuple[str, Any]


@dataclass(frozen=True)
class Constraint:
    claim: str
    """The claim's label, as DeviceRequest.claim."""
    attribute: str
    """Fully qualified (`domain/id`)."""
    requests: tuple[str, ...]
    """Empty: every request of the claim."""
    distinct: bool = False

    def covers(self, claim: str, request: str, subrequest: str) -> bool:
        if claim != self.claim:
            return False
        if not self.requests:
            return True
        return request in self.requests or f"{request}/{subrequest}" in self.requests

    def describe(self) -> str:
        kind = "distinctAttribute" if self.distinct else "matchAttribute"
        scope = ", ".join(self.requests) if self.requests else "all requests of the claim"
        return f"{kind} {self.attribute} over {scope}"


class Tally:
    """What a search's chosen devices hold each constraint to: the value a `matchAttribute`
    is bound to (and by how many devices), the values a `distinctAttribute` has seen."""

    def __init__(self, constraints: Sequence[Constraint]) -> None:
        self._distinct = [c.distinct for c in constraints]
        self._bound: list[TypedValue | None] = [None] * len(constraints)
        self._members = [0] * len(constraints)
        self._seen: list[list[TypedValue]] = [[] for _ in constraints]

    def admit(self, j: int, value: TypedValue | None) -> bool:
        """Counts a device with `value` of constraint j's attribute, if the constraint lets it
        in; a device without the attribute never does."""
        if value is None:
            return False
        if self._distinct[j]:
            if value in self._seen[j]:
                return False
            self._seen[j].append(value)
        elif self._members[j] and value != self._bound[j]:
            return False
        else:
            self._bound[j], self._members[j] = value, self._members[j] + 1
        return True

    def release(self, j: int) -> None:
        """Undoes constraint j's last admit."""
        if self._distinct[j]:
            self._seen[j].pop()
            return
        self._members[j] -= 1
        if not self._members[j]:
            self._bound[j] = None

    def state(self, constraints: Sequence[int]) -> tuple[object, ...]:
        return tuple(
            frozenset(self._seen[j]) if self._distinct[j] else self._bound[j] for j in constraints
        )


def typed_value(device: Device, attribute: str) -> TypedValue | None:
    value = device.attributes.get(attribute)
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int):
        return "int", value
    return ("version" if isinstance(value, Version) else "string"), value


def read_constraints(
    claim: str, spec: Json, requests: Sequence[str], subrequests: Sequence[Sequence[str]]
) -> list[Constraint | str]:
    """The claim spec's constraints, or for each unreadable one a problem saying why."""
    known = set(requests) | {
        f"{r}/{s}" for r, names in zip(requests, subrequests, strict=True) for s in names if s
    }
    raw = (spec.get("devices") or {}).get("constraints") or []
    return [_constraint(claim, i, c, known, requests) for i, c in enumerate(raw)]


def _constraint(
    claim: str, number: int, raw: Any, known: set[str], requests: Sequence[str]
) -> Constraint | str:
    where = f"claim {claim} constraint #{number}"
    if not isinstance(raw, dict):
        return f"{where}: not an object"
    match, distinct = raw.get("matchAttribute"), raw.get("distinctAttribute")
    if (match is None) == (distinct is None):
        return f"{where}: set exactly one of matchAttribute and distinctAttribute"
    attribute = match if match is not None else distinct
    if not isinstance(attribute, str) or attribute.count("/") != 1 or attribute.startswith("/"):
        return f"{where}: {attribute!r} is not a fully qualified attribute name (domain/id)"
    names = raw.get("requests") or []
    for name in names:
        if name not in known:
            return (
                f"{where} ({attribute}): {name!r} is not a request of the claim "
                f"(its requests: {', '.join(requests)})"
            )
    return Constraint(claim, attribute, tuple(str(n) for n in names), distinct is not None)
