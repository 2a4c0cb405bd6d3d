"""The simulated apiserver's DRA objects: the garbage collector and the ResourceClaim
controller's part when a pod goes (kubernetes pkg/controller/garbagecollector, pkg/controller/
resourceclaim/controller.go syncClaim), the check of devices allocated twice, and the extender's
reserve_claims on the store (extender/cluster/claims.py)."""

from __future__ import annotations

import asyncio

import pytest

from extender.cluster.snapshot import SnapshotSource
from extender.cluster.source import BindError
from kube_rdma.core.objects import Json
from kubesim.simulate.dra import DraStore
from kubesim.simulate.source import SimulatedSource, follow_claims
from kubesim.simulate.store import MemoryApiserver

NODES: list[Json] = [{"metadata": {"name": "n-0"}}, {"metadata": {"name": "n-1"}}]


def pod(name: str, claim: str = "c") -> Json:
    return {
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
        "spec": {"nodeName": "n-0", "resourceClaims": [{"name": "d", "resourceClaimName": claim}]},
        "status": {"phase": "Running"},
    }


def claim(
    name: str, node: str | None, devices: list[str], reserved: list[str], owner: str = ""
) -> Json:
    status: Json = {}
    if node is not None:
        results = [
            {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node, "device": d}
            for d in devices
        ]
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        status["allocation"] = {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [term]},
        }
    if reserved:
        status["reservedFor"] = [
            {"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved
        ]
    owners = [{"kind": "Pod", "name": owner, "uid": f"uid-{owner}", "controller": True}]
    return {
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "team", "ownerReferences": owners if owner else []},
        "status": status,
    }


def shown(dra: DraStore) -> dict[str, tuple[list[str], list[str]]]:
    """Each claim's allocated devices and the pods it is reserved for."""
    return {
        name: (
            [
                r["device"]
                for r in c["status"].get("allocation", {}).get("devices", {}).get("results", [])
            ],
            [e["name"] for e in c["status"].get("reservedFor") or []],
        )
        for (_, name), c in dra.claims().items()
    }


def test_a_deleted_pod_takes_its_own_claims_and_leaves_shared_ones_to_the_others() -> None:
    dra = DraStore(
        [
            claim("mine", "n-0", ["gpu-0"], ["a"], owner="a"),
            claim("shared", "n-0", ["gpu-1"], ["a", "b"]),
            claim("only-a", "n-0", ["gpu-2"], ["a"]),
        ]
    )
    api = MemoryApiserver(NODES, [pod("a"), pod("b")], lambda old, new: None, dra=dra)
    asyncio.run(api.delete_pod("team", "a"))
    # The claim a owned is gone; the shared one keeps b; one left reserved for no pod is
    # deallocated, its device free.
    assert shown(dra) == {"shared": (["gpu-1"], ["b"]), "only-a": ([], [])}


def test_a_claim_unreserved_by_a_failed_bind_stays_allocated() -> None:
    # Unreserve empties reservedFor itself: the controller deallocates only a claim it took the
    # last pod out of, so this one waits for kube-scheduler's PostFilter.
    dra = DraStore([claim("c", "n-0", ["gpu-0"], ["a"])])
    status = {**dra.claims()[("team", "c")]["status"], "reservedFor": []}
    asyncio.run(dra.update_claim_status("team", "c", {"status": status}))
    assert shown(dra) == {"c": (["gpu-0"], [])}


def test_a_device_allocated_to_a_second_claim_is_counted() -> None:
    dra = DraStore([claim("first", "n-0", ["gpu-0", "gpu-1"], ["a"])])
    asyncio.run(dra.create_claim("team", claim("second", "n-0", ["gpu-1"], ["b"])))
    assert dra.double_allocations == [
        (("gpu.nvidia.com", "n-0", "gpu-1"), ("team", "first"), ("team", "second"))
    ]


@pytest.mark.parametrize(
    ("stored", "pod_claim", "reserved", "error"),
    [
        (claim("c", "n-0", ["gpu-0"], []), "c", ["a"], None),
        (claim("c", "n-0", ["gpu-0"], ["a"]), "c", ["a"], None),
        (
            claim("c", "n-1", ["gpu-0"], []),
            "c",
            [],
            "ResourceClaim team/c is allocated on node n-1, not n-0",
        ),
        (claim("c", None, [], []), "c", [], "ResourceClaim team/c is no longer allocated"),
        (
            claim("c", "n-0", ["gpu-0"], []),
            "gone",
            [],
            "cannot reserve ResourceClaim team/gone: get ResourceClaim team/gone: NotFound: "
            'resourceclaims.resource.k8s.io "gone" not found',
        ),
    ],
)
def test_reserve_claims_puts_a_member_back_in_reserved_for(
    stored: Json, pod_claim: str, reserved: list[str], error: str | None
) -> None:
    dra = DraStore([stored])
    model = SnapshotSource([*NODES_AS_OBJECTS, stored])
    dra.on_claim(follow_claims(model.cluster))
    api = MemoryApiserver(NODES, [], lambda old, new: None, dra=dra)
    member = pod("a", pod_claim)
    if error is None:
        asyncio.run(SimulatedSource(model, api).reserve_claims(member, "n-0"))
    else:
        with pytest.raises(BindError) as raised:
            asyncio.run(SimulatedSource(model, api).reserve_claims(member, "n-0"))
        assert str(raised.value) == error
    assert shown(dra)["c"][1] == reserved
    followed = model.cluster.dra.claims[("team", "c")]
    assert [e["name"] for e in followed["status"].get("reservedFor") or []] == reserved


NODES_AS_OBJECTS: list[Json] = [{"kind": "Node", **n} for n in NODES]


def test_reserve_claims_refuses_a_member_whose_claim_is_not_made_yet() -> None:
    member = pod("a")
    member["spec"]["resourceClaims"] = [{"name": "d", "resourceClaimTemplateName": "t"}]
    api = MemoryApiserver(NODES, [], lambda old, new: None, dra=DraStore([]))
    with pytest.raises(BindError) as raised:
        asyncio.run(SimulatedSource(SnapshotSource([]), api).reserve_claims(member, "n-0"))
    assert str(raised.value) == "pod team/a: its claims d are not created yet"
