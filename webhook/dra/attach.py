"""The profile's ResourceClaimTemplate of aligned GPU-NIC pairs, attached to an opted-in pod.

A pod whose GPU container asks for GPUs as a device-plugin resource (`nvidia.com/gpu: 8`) gets
instead an entry in `spec.resourceClaims` naming the template the profile lists for that many
GPUs, and the container a `resources.claims` reference to it. The container's GPU and RDMA
resources are dropped: the claim gives those devices, and keeping the requests would allocate
them twice. A pod is given the template once: never when it has the entry already (a second
pass, or another webhook's), nor when one of its containers already gets GPUs or NICs from a
claim of its own, nor when several containers ask for GPUs (a claim is shared by every
container naming it, so they would share one set of devices instead of each having their own).
"""

from __future__ import annotations

from dataclasses import dataclass

from kube_rdma.core.objects import Json
from webhook.devices import counts_as_rdma
from webhook.dra.kinds import PodClaims
from webhook.podspec import gpu_count, mapping, sequence
from webhook.profiles import Profile


@dataclass(frozen=True)
class Attach:
    """The template to attach, to which container, under which claim name."""

    template: str
    container: str
    claim_name: str
    gpus: int


def template_for(pod: Json, profile: Profile, claims: PodClaims) -> tuple[Attach | None, str]:
    """The attachment the pod gets, or None with the reason when the profile has templates
    but this pod gets none of them ("" when there is nothing to explain)."""
    dra, spec = profile.dra, pod.get("spec") or {}
    if not dra.claim_templates:
        return None, ""
    if any(e.get("name") == dra.claim_name for e in spec.get("resourceClaims") or []):
        return None, ""
    containers = spec.get("containers") or []
    own = [str(c.get("name")) for c in containers if claims.of(c)]
    if own:
        return None, (
            f"kube-rdma: container {', '.join(own)} already gets devices from the pod's own "
            "claims, so the profile's ResourceClaimTemplate was not attached"
        )
    gpu_containers = [c for c in containers if gpu_count(c, profile.gpu_resources) > 0]
    if len(gpu_containers) != 1:
        return None, (
            ""
            if not gpu_containers
            else f"kube-rdma: {len(gpu_containers)} containers request GPUs and a claim would "
            "give them all the same devices, so the profile's ResourceClaimTemplate was not "
            "attached; they keep their device-plugin resources"
        )
    container = gpu_containers[0]
    gpus = gpu_count(container, profile.gpu_resources)
    template = dra.claim_templates.get(gpus)
    if template is None:
        listed = ", ".join(str(n) for n in sorted(dra.claim_templates))
        return None, (
            f"kube-rdma: container {container.get('name')} requests {gpus} GPUs and the profile "
            f"lists ResourceClaimTemplates for {listed} (dra.claimTemplates), so none was "
            "attached; it keeps its device-plugin resources"
        )
    return Attach(template, str(container.get("name")), dra.claim_name, gpus), ""


def attach(spec: Json, plan: Attach, profile: Profile, warnings: list[str]) -> None:
    """Add the claim entry and the container's reference; drop what the claim now gives."""
    sequence(spec, "resourceClaims").append(
        {"name": plan.claim_name, "resourceClaimTemplateName": plan.template}
    )
    container = next(c for c in spec["containers"] if c.get("name") == plan.container)
    resources = mapping(container, "resources")
    sequence(resources, "claims").append({"name": plan.claim_name})
    dropped: dict[str, None] = {}
    for kind in ("requests", "limits"):
        amounts = resources.get(kind) or {}
        for name in list(amounts):
            if name in profile.gpu_resources or counts_as_rdma(name, profile):
                del amounts[name]
                dropped[name] = None
        if kind in resources and not amounts:
            del resources[kind]
    warnings.append(
        f"kube-rdma: container {plan.container} gets its {plan.gpus} GPUs and their RDMA NICs "
        f"from ResourceClaimTemplate {plan.template} (claim {plan.claim_name}) instead of "
        f"{', '.join(dropped)}"
    )
