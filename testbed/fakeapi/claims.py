"""The apiserver's rules for a ResourceClaim's `status.reservedFor`, which the fake enforces on
every write of a claim (kubernetes pkg/apis/resource/validation, validateResourceClaimStatus
and validateResourceClaimConsumers): a claim is reserved only while it is allocated; each
consumer is named by resource, name and uid, a uid at most once; at most 256 consumers
(ResourceClaimReservedForMaxSize).
"""

from __future__ import annotations

from kube_rdma.core.objects import Json

RESERVED_FOR_MAX = 256


def claim_problem(claim: Json) -> str | None:
    """Why the apiserver would refuse `claim` (422), or None."""
    status = claim.get("status") or {}
    entries = status.get("reservedFor") or []
    name = (claim.get("metadata") or {}).get("name")
    invalid = f'ResourceClaim.resource.k8s.io "{name}" is invalid: status.reservedFor'
    if entries and not status.get("allocation"):
        return f"{invalid}: Forbidden: may not be specified when `allocated` is not set"
    if len(entries) > RESERVED_FOR_MAX:
        return f"{invalid}: Too many: {len(entries)}: must have at most {RESERVED_FOR_MAX} items"
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        for field in ("resource", "name", "uid"):
            if not isinstance(entry, dict) or not entry.get(field):
                return f"{invalid}[{index}].{field}: Required value"
        if entry["uid"] in seen:
            return f'{invalid}[{index}].uid: Duplicate value: "{entry["uid"]}"'
        seen.add(entry["uid"])
    return None
