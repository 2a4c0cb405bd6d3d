"""What evicting pods frees, their resource claims' devices included, by the ResourceClaim
controller's rules (kubernetes pkg/controller/resourceclaim/controller.go, syncClaim: the
allocation is cleared when the last pod in `reservedFor` is gone; owningPod: a claim generated
for a pod is deleted with it)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.cluster.devices import DEFAULT_DRA_NAMES
from extender.cluster.snapshot import SnapshotSource
from extender.preemption.freeing import Freeing, claim_freed, emptied, owning_pod
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.builders.gangs import Clock, scheduler
from testbed.clustergen.dra import GPU_DRIVER, NIC_DRIVER, dra_form

GPU = "nvidia.com/gpu"
NIC = "rdma/hca"


def claim(
    name: str,
    users: tuple[str, ...] = (),
    owner: str | None = None,
    gpus: range = range(0),
    nics: tuple[str, ...] = (),
    admin: bool = False,
    allocated: bool = True,
    node: str = "n0",
) -> Json:
    """A claim on `node`, holding GPUs `gpus` and NICs `nics`, reserved for the pods `users`
    (their UIDs, uid-<name>), generated for `owner` when given."""
    results: list[Json] = [
        {"request": "gpu", "driver": GPU_DRIVER, "pool": node, "device": f"gpu-{i}"} for i in gpus
    ]
    results += [{"request": "nic", "driver": NIC_DRIVER, "pool": node, "device": n} for n in nics]
    if admin:
        for result in results:
            result["adminAccess"] = True
    meta: Json = {"name": name, "namespace": "team-a"}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner,
                "uid": f"uid-{owner}",
                "controller": True,
            }
        ]
    status: Json = {
        "reservedFor": [{"resource": "pods", "name": u, "uid": f"uid-{u}"} for u in users]
    }
    if allocated:
        status["allocation"] = {"devices": {"results": results}}
    else:
        del status["reservedFor"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": []}},
        "status": status,
    }


@pytest.mark.parametrize(
    ("case", "found", "leaving", "freed"),
    [
        ("generated for the pod, reserved for it", claim("c", ("p",), "p"), {"uid-p"}, True),
        ("generated for the pod, not reserved yet", claim("c", (), "p"), {"uid-p"}, True),
        ("generated for another pod", claim("c", (), "q"), {"uid-p"}, False),
        ("shared, another user stays", claim("c", ("p", "q")), {"uid-p"}, False),
        ("shared, every user leaves", claim("c", ("p", "q")), {"uid-p", "uid-q"}, True),
        ("named claim, its last user leaves", claim("c", ("p",)), {"uid-p"}, True),
        ("owned by the pod, another user stays", claim("c", ("p", "q"), "p"), {"uid-p"}, False),
        ("allocated, reserved for no one", claim("c"), {"uid-p"}, False),
        ("not allocated", claim("c", ("p",), "p", allocated=False), {"uid-p"}, False),
    ],
)
def test_a_claim_is_freed_when_its_last_user_or_its_owning_pod_leaves(
    case: str, found: Json, leaving: set[str], freed: bool
) -> None:
    assert claim_freed(found, leaving) is freed, case


def test_the_owning_pod_is_its_controller_reference_of_kind_pod_only() -> None:
    found = claim("c", (), "p")
    assert owning_pod(found) == "uid-p"
    not_controller = copy.deepcopy(found)
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    assert owning_pod(not_controller) is None
    a_job = copy.deepcopy(found)
    a_job["metadata"]["ownerReferences"][0].update(apiVersion="batch/v1", kind="Job")
    assert owning_pod(a_job) is None


def cluster(claims: list[Json], pods: dict[str, tuple[str, ...]]) -> SnapshotSource:
    """Node n0 publishing 8 GPUs and 8 NICs through DRA; `pods`: pod -> the claims it names."""
    objects: list[Json] = [*dra_form([nodes.node("n0", nodes.hgx())]), *claims]
    for name, names in pods.items():
        pod = nodes.pod(name, gpus=0, rdma={}, node_name="n0", phase="Running")
        pod["spec"]["resourceClaims"] = [{"name": n, "resourceClaimName": n} for n in names]
        objects.append(pod)
    return SnapshotSource(objects)


def nic_names(source: SnapshotSource) -> list[str]:
    info = source.cluster.node("n0")
    assert info is not None
    assert info.devices is not None
    return [d.name for d, kind in info.devices.devices if kind == "nic"]


CASES: list[tuple[str, list[Json], dict[str, tuple[str, ...]], list[str], dict[str, Any]]] = [
    (
        "a pod's own claim: its 4 GPUs and 1 NIC",
        [claim("own", ("p",), "p", range(4), ("nic0",))],
        {"p": ("own",)},
        ["p"],
        {GPU: 4, NIC: 1},
    ),
    (
        "a claim shared with a pod that stays: nothing",
        [claim("shared", ("p", "q"), None, range(8))],
        {"p": ("shared",), "q": ("shared",)},
        ["p"],
        {},
    ),
    (
        "a claim shared by two pods that both leave: counted once",
        [claim("shared", ("p", "q"), None, range(8))],
        {"p": ("shared",), "q": ("shared",)},
        ["p", "q"],
        {GPU: 8},
    ),
    (
        "an adminAccess claim: nothing (it holds nothing)",
        [claim("watch", ("p",), "p", range(8), admin=True)],
        {"p": ("watch",)},
        ["p"],
        {},
    ),
    (
        "its own claim freed, the shared one kept",
        [
            claim("own", ("p",), "p", range(2), ("nic0", "nic1")),
            claim("shared", ("p", "q"), None, range(2, 6)),
        ],
        {"p": ("own", "shared"), "q": ("shared",)},
        ["p"],
        {GPU: 2, NIC: 2},
    ),
]


@pytest.mark.parametrize(("case", "claims", "pods", "leaving", "freed"), CASES)
def test_what_evicting_pods_frees_on_a_dra_node(
    case: str,
    claims: list[Json],
    pods: dict[str, tuple[str, ...]],
    leaving: list[str],
    freed: dict[str, int],
) -> None:
    probe = cluster([], {})
    names = nic_names(probe)
    for found in claims:
        for result in found["status"]["allocation"]["devices"]["results"]:
            if result["device"].startswith("nic"):
                result["device"] = names[int(result["device"][3:])]
    source = cluster(claims, pods)
    model = source.cluster
    chosen = [p for name in leaving if (p := model.pod("team-a", name)) is not None]
    result = Freeing(model, DEFAULT_DRA_NAMES).freed(chosen)
    assert result.resources == {"n0": freed}, case
    shared = [(c.name, c.amounts, sorted(c.users)) for c in result.shared]
    if case.startswith("a claim shared with a pod that stays"):
        assert shared == [("team-a/shared", {GPU: 8}, ["uid-p", "uid-q"])]
    elif case.startswith("an adminAccess"):
        assert shared == [], "an adminAccess claim is never freed: it holds nothing"
    node = model.node("n0")
    assert node is not None
    without = Freeing(model, DEFAULT_DRA_NAMES).without(node, chosen)
    for resource in (GPU, NIC):
        assert without.free(resource) == node.free(resource) + freed.get(resource, 0), case
    assert node.devices is not None
    assert without.devices is not None
    assert len(node.devices.held) - len(without.devices.held) == sum(freed.values()), case


def test_an_emptied_node_holds_no_device() -> None:
    source = cluster([claim("own", ("p",), "p", range(8))], {"p": ("own",)})
    node = source.cluster.node("n0")
    assert node is not None
    assert node.devices is not None
    assert (node.free(GPU), len(node.devices.held)) == (0, 8)
    empty = emptied(node)
    assert empty.devices is not None
    assert (empty.free(GPU), empty.devices.held) == (8, frozenset())


def running(name: str, node: str, priority: int, claims: tuple[str, ...]) -> Json:
    pod = nodes.pod(name, gpus=0, rdma={}, node_name=node, phase="Running")
    pod["spec"]["priority"] = priority
    pod["spec"]["resourceClaims"] = [{"name": n, "resourceClaimName": n} for n in claims]
    return pod


async def test_a_gang_takes_every_unit_sharing_a_claim_when_that_is_least_damage() -> None:
    """Pods p and q (priority 0) share the claim holding a0's GPUs; s (0) holds a1's, r (1)
    a2's. Two 8-GPU members of priority 10: evicting p, q and s does less damage than s and r,
    and the shared claim is freed by p and q together."""
    names = ["a0", "a1", "a2"]
    objects: list[Json] = dra_form(
        [nodes.node(n, nodes.hgx(), labels={keys.LEAF: "leaf-a"}) for n in names]
    )
    objects += [
        claim("shared", ("p", "q"), None, range(8), node="a0"),
        claim("own-s", ("s",), "s", range(8), node="a1"),
        claim("own-r", ("r",), "r", range(8), node="a2"),
        running("p", "a0", 0, ("shared",)),
        running("q", "a0", 0, ("shared",)),
        running("s", "a1", 0, ("own-s",)),
        running("r", "a2", 1, ("own-r",)),
    ]
    members = []
    for i in range(2):
        said = {keys.GANG: "urgent", keys.GANG_SIZE: "2"}
        member = nodes.pod(f"urgent-{i}", rdma={}, annotations=said)
        member["spec"]["priority"] = 10
        members.append(member)
    s = scheduler([*objects, *members], Clock())
    s.filter(members[0], names)
    hold = s.holds.get(("team-a", "urgent"))
    assert hold is not None
    assert sorted(name for name, _ in hold.units) == [
        "pod team-a/p",
        "pod team-a/q",
        "pod team-a/s",
    ]
    assert sorted(hold.nodes) == ["a0", "a1"]
    await s.evictor.drain()


def test_evicting_the_pods_frees_nothing_of_a_claim_reserved_for_their_podgroup() -> None:
    """A PodGroup's claim (scheduling.k8s.io, 1.36+) is reserved for the PodGroup, which
    outlives its pods: their eviction does not clear its allocation."""
    found = claim("c", ())
    found["status"]["reservedFor"] = [
        {"resource": "podgroups", "apiGroup": "scheduling.k8s.io", "name": "g", "uid": "pg"}
    ]
    assert claim_freed(found, {"uid-p", "pg"}) is False


def test_the_pods_podgroup_claims_are_counted_as_theirs() -> None:
    """A pod entry equal to its PodGroup's names the claim generated for the group, which the
    group's status names before the pod's does."""
    entry = {"name": "gpus", "resourceClaimTemplateName": "t"}
    spec = {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": [entry]}
    status = {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "own"}]}
    meta = {"name": "g", "namespace": "team-a"}
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta,
             "spec": spec, "status": status}  # fmt: skip
    source = cluster([claim("own", ("p",), "p", range(4))], {"p": ()})
    source.cluster.upsert_podgroup(group)
    pod = source.cluster.pod("team-a", "p")
    assert pod is not None
    pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    pod["spec"]["resourceClaims"] = [dict(entry)]
    freed = Freeing(source.cluster, DEFAULT_DRA_NAMES).freed([pod])
    assert freed.resources == {"n0": {GPU: 4}}
