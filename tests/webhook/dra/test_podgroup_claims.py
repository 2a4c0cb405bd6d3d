"""A pod of a Kubernetes PodGroup (scheduling.k8s.io v1alpha2+, the pod's
`spec.schedulingGroup`) whose claim entry is equal to one of its PodGroup's `spec.resourceClaims`
gets the one ResourceClaim generated for the whole group (core/v1 PodResourceClaim, 1.36+). Its
entry still names the same template (or claim) in every field, so the webhook reads what it
gives exactly as it reads a pod's own claim: the same devices, the same warnings."""

from __future__ import annotations

from kube_rdma.core.objects import Json
from tests.webhook.dra.objects import device_classes, placed, template
from webhook.dra.resolve import Resolver
from webhook.dra.source import StaticDra
from webhook.profiles.dra import Dra

NS = "team-a"


def pod(group: str | None) -> Json:
    spec: Json = {"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "single-gpu"},
                                     {"name": "gone", "resourceClaimName": "absent"}]}  # fmt: skip
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": "p", "namespace": NS}, "spec": spec}


async def test_a_podgroups_claim_is_read_as_the_pods_own() -> None:
    source = StaticDra([*device_classes(), placed(template("single-gpu"), NS)])
    own = await Resolver(source, NS, Dra()).pod_claims(pod(None))
    in_group = await Resolver(source, NS, Dra()).pod_claims(pod("llama"))
    assert in_group.claims == own.claims
    assert in_group.claims.requests["gpus"]
    assert in_group.warnings == own.warnings
    assert len(in_group.warnings) == 1
