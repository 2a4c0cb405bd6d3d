"""Reserving a gang member's claims again before the extender binds it itself."""

from __future__ import annotations

import pytest

from extender.cluster.claims import allocated_node, claim_names, reserved
from extender.cluster.snapshot import SnapshotSource
from extender.cluster.source import BindError
from kube_rdma.core.frameworks.kubernetes_scheduling import GroupClaim
from kube_rdma.core.objects import Json

POD: Json = {
    "metadata": {"name": "m-0", "namespace": "team-a", "uid": "u0"},
    "spec": {
        "resourceClaims": [
            {"name": "gpus", "resourceClaimName": "shared"},
            {"name": "nics", "resourceClaimTemplateName": "nics"},
        ]
    },
    "status": {"resourceClaimStatuses": [{"name": "nics", "resourceClaimName": "m-0-nics-x"}]},
}


def claim(name: str, node: str | None, reserved_for: list[Json] | None = None) -> Json:
    status: Json = {}
    if node is not None:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        status["allocation"] = {
            "devices": {"results": []},
            "nodeSelector": {"nodeSelectorTerms": [term]},
        }
    if reserved_for is not None:
        status["reservedFor"] = reserved_for
    return {
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "team-a"},
        "status": status,
    }


ME = {"resource": "pods", "name": "m-0", "uid": "u0"}
OTHER = {"resource": "pods", "name": "m-1", "uid": "u1"}


def test_claim_names_follow_the_generated_claims() -> None:
    assert claim_names(POD) == (["shared", "m-0-nics-x"], [])
    ungenerated = {**POD, "status": {}}
    assert claim_names(ungenerated) == (["shared"], ["nics"])


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (claim("c", "n1"), [ME]),
        (claim("c", "n1", [OTHER]), [OTHER, ME]),
        (claim("c", "n1", [ME]), None),
        (claim("c", None), "ResourceClaim team-a/c is no longer allocated"),
        (claim("c", "n2"), "ResourceClaim team-a/c is allocated on node n2, not n1"),
    ],
)
def test_reserved(stored: Json, expected: list[Json] | str | None) -> None:
    found = reserved(stored, POD, "n1")
    if isinstance(expected, str):
        assert found == expected
    elif expected is None:
        assert found is stored
    else:
        assert isinstance(found, dict)
        assert found["status"]["reservedFor"] == expected
        assert "reservedFor" not in stored["status"] or stored["status"]["reservedFor"] != expected


def test_allocated_node_reads_the_node_selector() -> None:
    assert (allocated_node(claim("c", "n7")), allocated_node(claim("c", None))) == ("n7", None)


async def test_the_snapshot_source_reserves_in_its_model() -> None:
    source = SnapshotSource([claim("shared", "n1"), claim("m-0-nics-x", "n1", [OTHER])])
    await source.reserve_claims(POD, "n1")
    stored = source.cluster.dra.claims
    assert stored["team-a", "shared"]["status"]["reservedFor"] == [ME]
    assert stored["team-a", "m-0-nics-x"]["status"]["reservedFor"] == [OTHER, ME]
    with pytest.raises(BindError, match="is allocated on node n1, not n2"):
        await source.reserve_claims(POD, "n2")


GROUP_CLAIMS = (
    GroupClaim("nics", "", "nics", "llama-nics-x"),
    GroupClaim("fixed", "shared", "", "shared"),
)
"""A PodGroup's claims (scheduling.k8s.io v1alpha2+ spec.resourceClaims, the generated names
from its status.resourceClaimStatuses)."""
IN_GROUP = {
    "resource": "podgroups",
    "apiGroup": "scheduling.k8s.io",
    "name": "llama",
    "uid": "pg",
}


def test_a_pod_entry_equal_to_its_podgroups_names_the_groups_claim() -> None:
    """core/v1 PodResourceClaim (1.36+): an entry matched to a PodGroupResourceClaim when all
    their fields are equal is the one ResourceClaim generated for the whole PodGroup."""
    ungenerated = {**POD, "status": {}}
    assert claim_names(ungenerated, GROUP_CLAIMS) == (["shared", "llama-nics-x"], [])
    other = {**ungenerated, "spec": {"resourceClaims": [{"name": "nics"}]}}
    assert claim_names(other, GROUP_CLAIMS) == ([], ["nics"]), "not equal in every field"


def test_a_claim_reserved_for_the_podgroup_covers_its_pods() -> None:
    stored = claim("llama-nics-x", "n1", [IN_GROUP])
    assert reserved(stored, POD, "n1") is stored
