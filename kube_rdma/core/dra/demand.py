"""What a pod's `spec.resourceClaims` ask of a node, resolved against the cluster's claims,
templates and DeviceClasses.

A claim named by `resourceClaimName` is read as it is; one made from
`resourceClaimTemplateName` is the claim the ResourceClaim controller generated (named in the
pod's `status.resourceClaimStatuses`) once it exists, the template's spec before. An allocated
claim asks for nothing more: its devices are held already, and the pod can only go to their
node. Each request's selectors are its DeviceClass's followed by its own, as the allocator
applies them. Every request is allocated on each node from that node's own devices, whatever
they are (a ComputeDomain channel, a MIG slice as well as GPUs and NICs): a request the node
cannot serve fails the node, as kube-scheduler's allocator fails it. A request, class or
selector the allocator or API validation refuses (an unknown allocationMode, a selector with no
CEL, a missing class) is a problem that fails every node.

A claim's `constraints` are read too (kube_rdma/core/dra/constraints.py); one that names a
request the claim does not have is a problem, as API validation rejects it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal

from kube_rdma.core.dra.constraints import Constraint, read_constraints
from kube_rdma.core.dra.index import DraIndex, ObjectKey
from kube_rdma.core.dra.kinds import Kind
from kube_rdma.core.dra.selectors import SelectorError, Selectors
from kube_rdma.core.dra.shapes import Request, Selection, read_requests
from kube_rdma.core.dra.taints import Toleration
from kube_rdma.core.objects import Json


@dataclass(frozen=True)
class Choice:
    """One way to satisfy a request, its selectors resolved."""

    kind: Kind | None
    """What the selectors take among the devices the cluster publishes, for the counts of
    extended resources; None for neither GPU nor RDMA NIC. The allocation itself is judged
    on each node's own devices, whatever their kind."""
    selectors: tuple[str, ...]
    all_devices: bool
    count: int
    subrequest: str = ""
    """The `firstAvailable` entry's name; empty for an exact request."""
    admin_access: bool = False
    capacity: Mapping[str, Decimal] | None = None
    """`capacity.requests` (kube_rdma/core/dra/capacity.py); None without `capacity`."""
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class DeviceRequest:
    claim: str
    """`<namespace>/<claim or template name>`, for messages."""
    request: str
    choices: tuple[Choice, ...]


@dataclass(frozen=True)
class PodDemand:
    requests: tuple[DeviceRequest, ...] = ()
    pinned: tuple[tuple[str, str], ...] = ()
    """(claim, node) for each allocated claim: the pod can only run there."""
    problems: tuple[str, ...] = ()
    """Claims, templates or classes that are missing or unreadable."""
    constraints: tuple[Constraint, ...] = ()
    """The constraints of the claims still to allocate."""

    def count(self, kind: Kind) -> int:
        """Devices of `kind` the first choice of each request takes (allocationMode All
        counts none: how many it takes depends on the node)."""
        return sum(
            r.choices[0].count for r in self.requests if r.choices and r.choices[0].kind == kind
        )


NO_DEMAND = PodDemand()


def pod_demand(pod: Json, index: DraIndex, selectors: Selectors) -> PodDemand:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    entries = [e for e in spec.get("resourceClaims") or [] if isinstance(e, dict)]
    if not entries:
        return NO_DEMAND
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    generated = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in status.get("resourceClaimStatuses") or []
        if isinstance(s, dict)
    }
    found = _Found()
    for entry in entries:
        _resolve(entry, namespace, generated, index, selectors, found)
    return PodDemand(
        tuple(found.requests), tuple(found.pinned), tuple(found.problems), tuple(found.constraints)
    )


class _Found:
    def __init__(self) -> None:
        self.requests: list[DeviceRequest] = []
        self.pinned: list[tuple[str, str]] = []
        self.problems: list[str] = []
        self.constraints: list[Constraint] = []


def _resolve(
    entry: Json,
    namespace: str,
    generated: dict[str, object],
    index: DraIndex,
    selectors: Selectors,
    found: _Found,
) -> None:
    claim_name = entry.get("resourceClaimName") or generated.get(str(entry.get("name")))
    template = entry.get("resourceClaimTemplateName")
    if claim_name:
        key: ObjectKey = (namespace, str(claim_name))
        claim = index.claims.get(key)
        if claim is None:
            found.problems.append(f"ResourceClaim {namespace}/{claim_name} does not exist (yet)")
        elif (claim.get("status") or {}).get("allocation"):
            node = index.claim_node(key)
            if node is not None:
                found.pinned.append((f"{namespace}/{claim_name}", node))
        else:
            _add(f"{namespace}/{claim_name}", claim.get("spec") or {}, index, selectors, found)
    elif template:
        obj = index.templates.get((namespace, str(template)))
        if obj is None:
            found.problems.append(f"ResourceClaimTemplate {namespace}/{template} does not exist")
        else:
            spec = (obj.get("spec") or {}).get("spec") or {}
            _add(f"{namespace}/{template}", spec, index, selectors, found)


def _add(label: str, spec: Json, index: DraIndex, selectors: Selectors, found: _Found) -> None:
    requests = read_requests(spec)
    names = _subrequest_names(spec)
    for request, subrequests in zip(requests, names, strict=True):
        resolved = _choices(label, request, index, selectors, found.problems)
        if resolved:
            named = tuple(
                replace(c, subrequest=n) for c, n in zip(resolved, subrequests, strict=True)
            )
            found.requests.append(DeviceRequest(label, request.name, named))
    constraints = read_constraints(label, spec, [r.name for r in requests], names)
    found.constraints.extend(c for c in constraints if isinstance(c, Constraint))
    found.problems.extend(c for c in constraints if isinstance(c, str))


def _subrequest_names(spec: Json) -> list[tuple[str, ...]]:
    """Per request (as read_requests reads them), its `firstAvailable` names, or ("",)."""
    raw = [r for r in (spec.get("devices") or {}).get("requests") or [] if isinstance(r, dict)]
    return [
        tuple(str(s.get("name") or "") if isinstance(s, dict) else "" for s in r["firstAvailable"])
        if r.get("firstAvailable") and not isinstance(r.get("exactly"), dict)
        else ("",)
        for r in raw
    ]


def _choices(
    label: str, request: Request, index: DraIndex, selectors: Selectors, problems: list[str]
) -> tuple[Choice, ...]:
    """The request's choices, each with the kind of device its selectors take (None where
    that is neither GPU nor RDMA NIC, or several kinds); none, with the problem noted, when a
    choice is one the allocator refuses (an unknown mode or selector type, a missing class, a
    selector that does not compile)."""
    choices = []
    for selection in request.alternatives:
        choice = _choice(label, request.name, selection, index, selectors, problems)
        if choice is None:
            return ()
        choices.append(choice)
    return tuple(choices)


def _choice(
    label: str,
    request: str,
    selection: Selection,
    index: DraIndex,
    selectors: Selectors,
    problems: list[str],
) -> Choice | None:
    if selection.problem:
        problems.append(f"claim {label} request {request}: {selection.problem}")
        return None
    device_class = index.classes.get(selection.device_class)
    if device_class is None:
        problems.append(
            f"claim {label} request {request}: DeviceClass {selection.device_class!r} "
            "does not exist"
        )
        return None
    if device_class.problem:
        problems.append(
            f"claim {label} request {request}: DeviceClass {device_class.name}: "
            f"{device_class.problem}"
        )
        return None
    expressions = device_class.selectors + selection.selectors
    try:
        for expression in expressions:
            selectors.check(expression)
    except SelectorError as e:
        problems.append(f"claim {label} request {request}: {e}")
        return None
    kind = index.kind_of_class(device_class.selectors, selection.selectors, selectors)
    return Choice(
        kind,
        expressions,
        selection.all_devices,
        selection.count,
        "",
        selection.admin_access,
        selection.capacity,
        selection.tolerations,
    )
