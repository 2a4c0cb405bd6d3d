"""Reserving a gang member's resource claims for it again, before the extender binds it.

kube-scheduler's DynamicResources plugin allocates a pod's claims and reserves them for the pod
(`status.reservedFor`) in PreBind, before the bind call; when the bind call fails or times out,
Unreserve removes the pod from `reservedFor` again (kubernetes pkg/scheduler/framework/plugins/
dynamicresources, Unreserve: a strategic-merge patch deleting the pod's entry). A gang member
whose bind request timed out at the barrier is bound later by the extender itself, outside any
bind call, and the kubelet does not start a pod its claims are not reserved for. So before that
bind the extender puts the pod back in each claim's `reservedFor`, if the claim is still
allocated on the member's node; if it is not (deallocated, or allocated elsewhere), the member
is not bound by the extender: kube-scheduler retries it, and its plan steers it to its node,
where it binds inside its own bind call.

A claim a Kubernetes PodGroup owns (1.36+, its `spec.resourceClaims`: one ResourceClaim for all
its pods, past the 256 entries of `reservedFor`) is reserved for the PodGroup, not for each pod:
it is read as the pod's own claim (a pod entry equal to the group's in every field names it,
the group's `status.resourceClaimStatuses` giving the generated name before the pod's status
does), and a pod needs no entry of its own in a claim reserved for its PodGroup.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from kube_rdma.core.frameworks.kubernetes_scheduling import GroupClaim
from kube_rdma.core.objects import Json

PODGROUPS = "podgroups"
"""`reservedFor[].resource` of a claim reserved for a scheduling.k8s.io PodGroup."""


def claim_names(pod: Json, group: Sequence[GroupClaim] = ()) -> tuple[list[str], list[str]]:
    """The names of the pod's claims, and the claim entries whose generated claim is not known
    (named in neither the entry, `status.resourceClaimStatuses` nor its PodGroup's claims,
    `group`)."""
    generated = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if isinstance(s, dict)
    }
    names: list[str] = []
    unknown: list[str] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        if not isinstance(entry, dict):
            continue
        name = entry.get("resourceClaimName") or generated.get(str(entry.get("name")))
        name = name or next((c.resolved for c in group if c.matches(entry)), None)
        (names if name else unknown).append(str(name or entry.get("name")))
    return names, unknown


def allocated_node(claim: Json) -> str | None:
    """The node a claim's allocation is for, from its node selector (`metadata.name In [node]`,
    as the allocator writes it for node-local devices)."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            values = field.get("values") or []
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and values:
                return str(values[0])
    return None


def reserved(claim: Json, pod: Json, node: str) -> Json | str:
    """`claim` with `pod` in its `reservedFor` (the same object when it already is), or why it
    cannot be: the claim is not allocated on `node`."""
    meta = claim.get("metadata") or {}
    label = f"ResourceClaim {meta.get('namespace')}/{meta.get('name')}"
    status = claim.get("status") or {}
    if not status.get("allocation"):
        return f"{label} is no longer allocated"
    where = allocated_node(claim)
    if where is not None and where != node:
        return f"{label} is allocated on node {where}, not {node}"
    pod_meta = pod.get("metadata") or {}
    uid = str(pod_meta.get("uid") or "")
    entries = status.get("reservedFor") or []
    if any(isinstance(e, dict) and e.get("uid") == uid for e in entries):
        return claim
    if any(isinstance(e, dict) and e.get("resource") == PODGROUPS for e in entries):
        return claim  # reserved for the pod's PodGroup, which covers its pods
    updated = copy.deepcopy(claim)
    entry = {"resource": "pods", "name": pod_meta.get("name"), "uid": uid}
    updated["status"]["reservedFor"] = [*entries, entry]
    return updated
