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
