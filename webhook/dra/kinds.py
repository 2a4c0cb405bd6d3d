"""Which devices a pod's claims give its containers: GPUs, RDMA NICs, or neither.

A container names claims in `resources.claims` (`{name, request?}`): the name is an entry of the
pod's `spec.resourceClaims`, and `request`, when set, narrows it to one request of that claim
(kubernetes pkg/apis/core/types.go, ResourceClaim). A request asks for devices of one
DeviceClass, or under `firstAvailable` of one of several; resource.k8s.io v1 and v1beta2 put the
class under `exactly`, v1beta1 on the request itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kube_rdma.core.dra.shapes import cel_expressions
from kube_rdma.core.objects import Json
from webhook.dra.classes import Verdict
from webhook.dra.device_kind import DeviceKind as DeviceKind  # re-exported
from webhook.profiles import Dra

Kinds = frozenset[DeviceKind]
Alternative = tuple[str, tuple[str, ...]]
"""One way a request may be satisfied: a DeviceClass and the request's own CEL selectors."""
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
"""What the apiserver accepts as a container reference's `request` (a DNS-1123 label)."""


def request_alternatives(request: Json) -> list[Alternative]:
    """The DeviceClasses (each with the request's own selectors) one request of a claim may
    be satisfied from: the exact request's, or each of `firstAvailable`."""
    chosen = request.get("exactly") or request
    found = [chosen] if chosen.get("deviceClassName") else []
    found += [s for s in request.get("firstAvailable") or [] if isinstance(s, dict)]
    return [
        (name, cel_expressions(s.get("selectors")))
        for s in found
        if isinstance(name := s.get("deviceClassName"), str) and name
    ]


def device_requests(obj: Json) -> list[Json]:
    """The device requests of a ResourceClaim or a ResourceClaimTemplate."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    requests = (spec.get("devices") or {}).get("requests") or []
    return [r for r in requests if isinstance(r, dict)]


def known_kind(name: str, dra: Dra) -> DeviceKind | None:
    """The kind of a class listed by name in the profile."""
    if name in dra.gpu_classes:
        return DeviceKind.GPU
    if name in dra.nic_classes:
        return DeviceKind.NIC
    return None


def class_selectors(device_class: Json) -> tuple[str, ...]:
    return cel_expressions((device_class.get("spec") or {}).get("selectors"))


def alternative_verdict(
    name: str, device_class: Json | None, request_selectors: tuple[str, ...], dra: Dra
) -> Verdict:
    """What class `name`, narrowed by a request's selectors, gives: listed by name, else
    judged by its CEL (`webhook.dra.classes`); nothing when the class was not read."""
    kind = known_kind(name, dra)
    if kind is not None or device_class is None:
        return Verdict(kind)
    return dra.class_kinds.verdict(class_selectors(device_class) + request_selectors)


def request_count(request: Json) -> int:
    """How many devices a request asks for: its count (1 when unset), the first alternative's
    under `firstAvailable`, and 0 for `allocationMode: All` (every matching device of the node,
    unknown until allocation)."""
    alternatives = request.get("firstAvailable") or []
    chosen = alternatives[0] if alternatives else (request.get("exactly") or request)
    if chosen.get("allocationMode") == "All":
        return 0
    count = chosen.get("count", 1)
    return count if isinstance(count, int) and count >= 0 else 1


@dataclass(frozen=True)
class Devices:
    """What one request of a claim gives."""

    kinds: Kinds
    count: int


def request_devices(
    requests: Iterable[Json], kinds: Mapping[Alternative, DeviceKind | None]
) -> dict[str, Devices]:
    """Each request's devices, from the kind of each of its alternatives (`kinds`)."""
    return {
        str(r.get("name")): Devices(
            frozenset(k for k in (kinds.get(a) for a in request_alternatives(r)) if k is not None),
            request_count(r),
        )
        for r in requests
    }


@dataclass(frozen=True)
class PodClaims:
    """What each entry of the pod's `spec.resourceClaims` gives, request by request."""

    requests: Mapping[str, Mapping[str, Devices]] = field(default_factory=dict)

    def _devices(self, container: Json) -> list[Devices]:
        """The requests `container` gets devices from through its `resources.claims`."""
        found: list[Devices] = []
        for ref in (container.get("resources") or {}).get("claims") or []:
            if not isinstance(ref, dict):
                continue
            entry = self.requests.get(str(ref.get("name")), {})
            wanted = ref.get("request")
            if wanted:
                found += [entry[wanted]] if wanted in entry else []
            else:
                found += entry.values()
        return found

    def of(self, container: Json) -> Kinds:
        """The kinds of devices `container` gets through its claims."""
        return frozenset(k for d in self._devices(container) for k in d.kinds)

    def gpu_count(self, container: Json) -> int:
        """The GPUs `container` gets through its claims, as far as known before allocation."""
        return sum(d.count for d in self._devices(container) if DeviceKind.GPU in d.kinds)

    def with_entry(self, name: str, requests: Mapping[str, Devices]) -> PodClaims:
        return PodClaims({**self.requests, name: requests})

    def nic_references(self, containers: Iterable[Json]) -> list[Json]:
        """The `resources.claims` references that give the resolver init container the RDMA
        NICs `containers` get through their claims, each once.

        Kubelet prepares every claim of the pod before any container starts, and hands a
        container the CDI devices (and so the device metadata mounts) of the claims it names
        only: of the whole claim, or of one request when `request` is set (kubernetes
        pkg/kubelet/cm/dra/manager.go, PrepareResources and GetResources). Naming a claim
        allocates nothing more, since claims belong to the pod. So the resolver names what
        gives NICs and nothing else: a claim all of whose requests give NICs whole, else each
        request that does, so that it is not handed GPUs it does not use. A reference naming
        no pod claim, or a request the claim does not have, gives the resolver nothing: the
        apiserver refuses the pod for its own container's reference, and ours stays valid."""
        found: dict[tuple[str, str], Json] = {}
        for container in containers:
            for ref in (container.get("resources") or {}).get("claims") or []:
                name = ref.get("name") if isinstance(ref, dict) else None
                entry = self.requests.get(name) if isinstance(name, str) else None
                if not entry or not isinstance(name, str):
                    continue
                for request in _nic_requests(entry, ref.get("request")):
                    key = (name, request)
                    found[key] = {"name": name, **({"request": request} if request else {})}
        whole = {name for name, request in found if not request}
        return [ref for (name, request), ref in found.items() if not request or name not in whole]

    def gpus(self, container: Json) -> bool:
        return DeviceKind.GPU in self.of(container)

    def nics(self, container: Json) -> bool:
        return DeviceKind.NIC in self.of(container)


def _nic_requests(entry: Mapping[str, Devices], wanted: object) -> list[str]:
    """Which of a claim's requests a reference's NICs come from: "" for the whole claim."""
    nics = [r for r, d in entry.items() if DeviceKind.NIC in d.kinds]
    if wanted:
        nics = [r for r in nics if r == wanted]
    elif nics and len(nics) == len(entry):
        return [""]
    return [r for r in nics if _DNS_LABEL.fullmatch(r)]


NO_CLAIMS = PodClaims()
