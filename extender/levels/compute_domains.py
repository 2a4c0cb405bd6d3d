"""Whether a pod needs multi-node NVLink, read off its resource claims.

NVIDIA's GPU DRA driver gives a job multi-node NVLink through a ComputeDomain
(NVIDIA/k8s-dra-driver-gpu): its controller creates a ResourceClaimTemplate
(templates/compute-domain-workload-claim-template.tmpl.yaml) with one request for a device of
the DeviceClass `compute-domain-default-channel.nvidia.com` (an IMEX channel), and every pod of
the job names that template in `spec.resourceClaims`. The class selects devices of the driver
`compute-domain.nvidia.com` (deployments/helm/dra-driver-nvidia-gpu/templates/
deviceclass-compute-domain-*.yaml). GPU memory is shared over NVLink only inside one NVLink
domain, so such a gang requires that domain.

A claim is the driver's when one of its requests, on every alternative, names a DeviceClass
whose CEL selectors, with the request's own, match a device the driver publishes: an IMEX
channel or the daemon's device, attribute `type` `channel` or `daemon` and `id` from 0
(cmd/compute-domain-kubelet-plugin/deviceinfo.go), evaluated by the same CEL library as every
other selector, never by reading the expression's text. A claim already allocated says its
driver in `status.allocation.devices.results`.
"""

from __future__ import annotations

from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import SelectorError, Selectors
from kube_rdma.core.dra.shapes import Device, Request, allocated_devices, read_requests
from kube_rdma.core.objects import Json

DRIVER = "compute-domain.nvidia.com"

PUBLISHED = tuple(
    Device(DRIVER, "", f"{kind}-0", {f"{DRIVER}/type": kind, f"{DRIVER}/id": 0})
    for kind in ("channel", "daemon")
)
"""The devices the driver's kubelet plugin publishes, as CEL sees them (the first of each
kind: the default channel class asks for channel 0)."""


def nvlink_claim(pod: Json, index: DraIndex, selectors: Selectors) -> str | None:
    """`<namespace>/<name>` of the pod's first claim (or claim template) of the ComputeDomain
    driver; None when it has none, or when its claims and templates are not known yet."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    generated = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in status.get("resourceClaimStatuses") or []
        if isinstance(s, dict)
    }
    for entry in spec.get("resourceClaims") or []:
        if not isinstance(entry, dict):
            continue
        name = entry.get("resourceClaimName") or generated.get(str(entry.get("name")))
        claim = index.claims.get((namespace, str(name))) if name else None
        if claim is not None and _claims_the_driver(claim, index, selectors):
            return f"{namespace}/{name}"
        template = entry.get("resourceClaimTemplateName")
        found = index.templates.get((namespace, str(template))) if template else None
        if claim is None and found is not None and _template_asks(found, index, selectors):
            return f"{namespace}/{template}"
    return None


def _template_asks(template: Json, index: DraIndex, selectors: Selectors) -> bool:
    return _asks_the_driver((template.get("spec") or {}).get("spec") or {}, index, selectors)


def _claims_the_driver(claim: Json, index: DraIndex, selectors: Selectors) -> bool:
    allocated = allocated_devices(claim)
    if allocated:
        return any(device[0] == DRIVER for device, _ in allocated)
    return _asks_the_driver(claim.get("spec") or {}, index, selectors)


def _asks_the_driver(claim_spec: Json, index: DraIndex, selectors: Selectors) -> bool:
    return any(_request_of_the_driver(r, index, selectors) for r in read_requests(claim_spec))


def _request_of_the_driver(request: Request, index: DraIndex, selectors: Selectors) -> bool:
    if not request.alternatives:
        return False
    for selection in request.alternatives:
        device_class = index.classes.get(selection.device_class)
        class_selectors = device_class.selectors if device_class is not None else ()
        expressions = class_selectors + selection.selectors
        if not expressions or not _matches_published(expressions, selectors):
            return False
    return True


def _matches_published(expressions: tuple[str, ...], selectors: Selectors) -> bool:
    try:
        return any(selectors.matches(expressions, device) for device in PUBLISHED)
    except SelectorError:
        return False
