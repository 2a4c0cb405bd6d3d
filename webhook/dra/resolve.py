"""One pod's claims, read and classified: which devices each claim entry gives.

An entry names a ResourceClaim (`resourceClaimName`) or a ResourceClaimTemplate
(`resourceClaimTemplateName`) in the pod's namespace. Each class a request names is classified
by the profile's lists, and only a class not listed there by name is read. A claim or template
that does not exist (yet) gives nothing, with a warning: the pod stays pending until it exists,
which is the resourceclaim controller's and the scheduler's business, not the webhook's.
A pod of a Kubernetes PodGroup (1.36+) whose entry equals one of the group's
`spec.resourceClaims` shares the one claim made for the group; its entry names the same claim
or template, so it is read the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kube_rdma.core.objects import Json
from webhook.denied import Denied
from webhook.dra.kinds import (
    NO_CLAIMS,
    Alternative,
    DeviceKind,
    Devices,
    PodClaims,
    alternative_verdict,
    device_requests,
    known_kind,
    request_alternatives,
    request_devices,
)
from webhook.dra.source import CLAIMS, CLASSES, TEMPLATES, DraSource, DraUnavailable
from webhook.profiles import Dra


@dataclass
class Resolved:
    claims: PodClaims = NO_CLAIMS
    warnings: list[str] = field(default_factory=list)


class Resolver:
    """Reads what one review needs; each DeviceClass at most once per review."""

    def __init__(self, source: DraSource, namespace: str, dra: Dra) -> None:
        self._source = source
        self._namespace = namespace
        self._dra = dra
        self._kinds: dict[Alternative, DeviceKind | None] = {}
        self._warnings: list[str] = []

    async def pod_claims(self, pod: Json) -> Resolved:
        out = Resolved(warnings=self._warnings)
        requests: dict[str, dict[str, Devices]] = {}
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            if not isinstance(entry, dict):
                continue
            obj = await self._claim_object(entry, out.warnings)
            requests[str(entry.get("name"))] = await self.devices(obj) if obj else {}
        out.claims = PodClaims(requests)
        return out

    async def template(self, name: str) -> Json | None:
        return await self._get(TEMPLATES, self._namespace, name)

    async def devices(self, obj: Json) -> dict[str, Devices]:
        """What each request of a claim or template gives."""
        requests = device_requests(obj)
        for request in requests:
            for alternative in request_alternatives(request):
                if alternative not in self._kinds:
                    self._kinds[alternative] = await self._kind(*alternative)
        return request_devices(requests, self._kinds)

    async def _kind(self, name: str, selectors: tuple[str, ...]) -> DeviceKind | None:
        """A class listed by name is not read; another is read and judged by its CEL."""
        kind = known_kind(name, self._dra)
        if kind is not None:
            return kind
        device_class = await self._get(CLASSES, None, name)
        verdict = alternative_verdict(name, device_class, selectors, self._dra)
        if verdict.problem:
            narrowed = " with a request's own selectors" if selectors else ""
            warning = (
                f"kube-rdma: DeviceClass {name}{narrowed} counts as neither GPU nor RDMA NIC: "
                f"{verdict.problem}; list it in the profile's dra.gpuClasses or dra.nicClasses "
                "to say which it gives"
            )
            if warning not in self._warnings:
                self._warnings.append(warning)
        return verdict.kind

    async def _claim_object(self, entry: Json, warnings: list[str]) -> Json | None:
        claim, template = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        if not isinstance(claim, str) and not isinstance(template, str):
            return None
        plural, kind, name = (
            (CLAIMS, "ResourceClaim", claim)
            if isinstance(claim, str)
            else (TEMPLATES, "ResourceClaimTemplate", str(template))
        )
        obj = await self._get(plural, self._namespace, name)
        if obj is None:
            warnings.append(
                f"kube-rdma: {kind} {self._namespace}/{name} (claim {entry.get('name')}) does "
                "not exist, so the devices it gives were not counted"
            )
            return None
        return {**obj, "kind": kind}

    async def _get(self, plural: str, namespace: str | None, name: str) -> Json | None:
        try:
            return await self._source.get(plural, namespace, name)
        except DraUnavailable as e:
            raise Denied(
                f"kube-rdma could not read the pod's DRA objects ({e}); create the pod again "
                "once the apiserver answers"
            ) from e
