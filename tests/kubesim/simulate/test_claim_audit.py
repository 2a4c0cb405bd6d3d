"""The claim audit: every reason a bound DRA pod could not run, judged at its bind and at each
later write of its claim."""

from __future__ import annotations

import pytest

from kube_rdma.core.objects import Json
from kubesim.simulate.claim_audit import ClaimAudit

NODE_TERM = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
ELSEWHERE = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
RESERVED = [{"resource": "pods", "name": "p", "uid": "u-p"}]


def pod(node: str | None = "n1", entry: Json | None = None) -> Json:
    spec: Json = {"containers": [{"name": "c"}]}
    spec["resourceClaims"] = [entry or {"name": "devices", "resourceClaimName": "c"}]
    if node is not None:
        spec["nodeName"] = node
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u-p"}, "spec": spec}


def claim(term: Json | None = NODE_TERM, reserved: list[Json] | None = None) -> Json:
    status: Json = {}
    if term is not None:
        status["allocation"] = {
            "devices": {"results": []},
            "nodeSelector": {"nodeSelectorTerms": [term]},
        }
    status["reservedFor"] = RESERVED if reserved is None else reserved
    return {"metadata": {"name": "c", "namespace": "ns"}, "status": status}


@pytest.mark.parametrize(
    ("claims", "entry", "problem"),
    [
        ({("ns", "c"): claim()}, None, None),
        ({}, None, "ResourceClaim ns/c does not exist"),
        ({("ns", "c"): claim(term=None)}, None, "ResourceClaim ns/c is not allocated"),
        (
            {("ns", "c"): claim(term=ELSEWHERE)},
            None,
            "ResourceClaim ns/c is allocated on node n2, not n1",
        ),
        (
            {("ns", "c"): claim(reserved=[])},
            None,
            "ResourceClaim ns/c is not reserved for pod ns/p",
        ),
        (
            {},
            {"name": "devices", "resourceClaimTemplateName": "t"},
            "claim devices is not created",
        ),
    ],
    ids=["ok", "missing", "unallocated", "elsewhere", "unreserved", "not-generated"],
)
def test_a_bind_is_judged_by_its_claims(
    claims: dict[tuple[str, str], Json], entry: Json | None, problem: str | None
) -> None:
    audit = ClaimAudit(claims)
    audit.pod_changed(pod(None, entry), pod("n1", entry))
    assert (audit.bound, audit.bound_reserved) == (1, 1 if problem is None else 0)
    assert audit.unreserved == ({} if problem is None else {("ns", "p"): problem})


def test_a_later_write_taking_the_pod_out_of_its_claim_is_caught_once() -> None:
    claims = {("ns", "c"): claim()}
    audit = ClaimAudit(claims)
    audit.pod_changed(None, pod())
    audit.pod_changed(pod(), pod())  # a status update of the bound pod: no second bind
    assert (audit.bound, audit.bound_reserved, audit.unreserved) == (1, 1, {})
    claims["ns", "c"] = claim(reserved=[])
    audit.claim_changed("MODIFIED", claims["ns", "c"])
    claims["ns", "c"] = claim(term=None)
    audit.claim_changed("MODIFIED", claims["ns", "c"])
    assert audit.unreserved == {("ns", "p"): "ResourceClaim ns/c is not reserved for pod ns/p"}


def test_a_pod_gone_is_no_longer_judged() -> None:
    claims = {("ns", "c"): claim()}
    audit = ClaimAudit(claims)
    audit.pod_changed(None, pod())
    audit.pod_changed(pod(), None)
    claims["ns", "c"] = claim(term=None)
    audit.claim_changed("DELETED", claims["ns", "c"])
    assert audit.unreserved == {}
