"""Whether DRA pods ran with their claims, checked on the simulated apiserver's writes.

The kubelet starts a pod only once each of its claims is allocated and reserved for it
(`status.reservedFor`, kubernetes pkg/kubelet/cm/dra). So when a pod with claims is bound, each
claim must be there, allocated on the pod's node, and name the pod in `reservedFor`; and while
it stays bound, no write may take the pod out of a claim's `reservedFor` or drop the claim's
allocation (kube-scheduler's Unreserve after a bind call timed out does exactly that). A pod
seen either way counts once in `unreserved`, with the first reason.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.cluster.claims import allocated_node, claim_names
from kube_rdma.core.objects import Json
from kubesim.scheduler import bound_node, pod_key
from kubesim.simulate.dra import ObjectKey

PodKey = tuple[str, str]


class ClaimAudit:
    def __init__(self, claims: Mapping[ObjectKey, Json]) -> None:
        self._claims = claims
        self.bound = 0
        """Binds of pods with claims."""
        self.bound_reserved = 0
        """Of those, binds with every claim allocated on the node and reserved for the pod."""
        self.unreserved: dict[PodKey, str] = {}
        self._users: dict[ObjectKey, dict[PodKey, Json]] = {}
        """The bound pods of each claim."""

    def pod_changed(self, old: Json | None, new: Json | None) -> None:
        if old is not None and bound_node(old):
            for name in claim_names(old)[0]:
                self._users.get((pod_key(old)[0], name), {}).pop(pod_key(old), None)
        if new is None or not bound_node(new) or not (new.get("spec") or {}).get("resourceClaims"):
            return
        fresh = old is None or not bound_node(old)
        names, unknown = claim_names(new)
        namespace = pod_key(new)[0]
        for name in names:
            self._users.setdefault((namespace, name), {})[pod_key(new)] = new
        if not fresh:
            return
        self.bound += 1
        problems = [f"claim {u} is not created" for u in unknown]
        problems += filter(None, (self._problem(new, (namespace, n)) for n in names))
        if problems:
            self.unreserved.setdefault(pod_key(new), problems[0])
        else:
            self.bound_reserved += 1

    def claim_changed(self, event: str, claim: Json) -> None:
        meta = claim.get("metadata") or {}
        key = (str(meta.get("namespace")), str(meta.get("name")))
        for pod in list(self._users.get(key, {}).values()):
            problem = self._problem(pod, key)
            if problem is not None:
                self.unreserved.setdefault(pod_key(pod), problem)

    def _problem(self, pod: Json, key: ObjectKey) -> str | None:
        """Why the claim does not let the bound pod run (None: it does)."""
        shown = f"ResourceClaim {key[0]}/{key[1]}"
        claim = self._claims.get(key)
        if claim is None:
            return f"{shown} does not exist"
        status = claim.get("status") or {}
        node = bound_node(pod)
        if not status.get("allocation"):
            return f"{shown} is not allocated"
        if allocated_node(claim) not in (None, node):
            return f"{shown} is allocated on node {allocated_node(claim)}, not {node}"
        uid = (pod.get("metadata") or {}).get("uid")
        if not any(e.get("uid") == uid for e in status.get("reservedFor") or []):
            return f"{shown} is not reserved for pod {pod_key(pod)[0]}/{pod_key(pod)[1]}"
        return None
