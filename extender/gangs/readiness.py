"""Whether the devices of a gang's members are ready to bind: their claims' binding conditions
(kube_rdma/core/dra/binding.py) read off the claims the cluster model holds.

kube-scheduler's DynamicResources PreBind waits for a claim's binding conditions before the
extender's bind is called, but a member that arrived at the bind barrier may wait there long
after: a device may fail (a binding failure condition turns True) or fall back to not ready
meanwhile. So the barrier opens only once every arrived member's devices are ready, and gives
the gang up (nothing bound, the gang planned again) when one has failed. One still not ready
keeps the gang at the barrier, and the barrier's progress timeout gives it up as it gives up a
member that never arrives.
"""

from __future__ import annotations

from collections.abc import Iterable

from extender.cluster.model import Cluster
from extender.cluster.pods import PodKey
from kube_rdma.core.dra.binding import BindingError, Readiness, Verdict, claim_readiness
from kube_rdma.core.objects import Json


def members_ready(cluster: Cluster, members: Iterable[PodKey]) -> Verdict:
    """FAILED for the first member whose devices failed (or whose claim's status cannot be
    read), else WAITING for the first not ready, else READY."""
    waiting: Verdict | None = None
    for namespace, name in sorted(members):
        pod = cluster.pod(namespace, name)
        if pod is None:
            continue
        for claim_name in _claim_names(pod):
            claim = cluster.dra.claims.get((namespace, claim_name))
            if claim is None:
                continue
            try:
                verdict = claim_readiness(claim)
            except BindingError as e:
                verdict = Verdict(Readiness.FAILED, f"its status cannot be read: {e}")
            if verdict.readiness is Readiness.READY:
                continue
            where = f"member {namespace}/{name}, claim {claim_name}: {verdict.reason}"
            if verdict.readiness is Readiness.FAILED:
                return Verdict(Readiness.FAILED, where)
            waiting = waiting or Verdict(Readiness.WAITING, where)
    return waiting or Verdict(Readiness.READY)


def _claim_names(pod: Json) -> list[str]:
    generated = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if isinstance(s, dict)
    }
    names = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        if not isinstance(entry, dict):
            continue
        name = entry.get("resourceClaimName") or generated.get(str(entry.get("name")))
        if name:
            names.append(str(name))
    return names
