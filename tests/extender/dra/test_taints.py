"""A tainted RDMA NIC, by its ResourceSlice or by a DeviceTaintRule naming it (as the node agent
publishes one for an unhealthy NIC, agent/dra_taints.py), is neither allocated nor planned: the
filter refuses a node whose only free NIC is tainted, naming the taint, as kube-scheduler's
allocator does not give a device to a request that does not tolerate its taints
(k8s.io/dynamic-resource-allocation structured/internal allocateDevice,
taintPreventsAllocation)."""

from __future__ import annotations

import pytest

from kube_rdma.core.keys import GANG, GANG_SIZE
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from tests.extender.dra.test_equivalence import answers
from tests.kube_rdma.core.dra.fixtures import NIC_CLASS, claim, exactly, nic, pod, slice_

NIC0 = "pci-0000-20-00-0"
UNHEALTHY = {"key": "kube-rdma.io/rdma-unhealthy", "effect": "NoSchedule"}
RULE: Json = {
    "apiVersion": "resource.k8s.io/v1beta2",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "n1-nic0"},
    "spec": {
        "deviceSelector": {"driver": "dra.net", "pool": "n1", "device": NIC0},
        "taint": UNHEALTHY,
    },
}


def nic_node(name: str, *taints: Json) -> list[Json]:
    device = {**nic(0), "taints": list(taints)} if taints else nic(0)
    node = nodes.node(name, nodes.hgx(gpus=0, nics=1), gpus=0, rdma={})
    return [node, slice_(f"{name}-nic", name, "dra.net", [device])]


def cluster(tainted: list[Json], *extra: Json, tolerations: list[Json] | None = None) -> list[Json]:
    request = exactly("n", NIC_CLASS["metadata"]["name"], 1)
    if tolerations is not None:
        request["exactly"]["tolerations"] = tolerations
    return [
        *tainted,
        *nic_node("n2"),
        NIC_CLASS,
        claim("c", [request]),
        {"kind": "Pod", **pod("p", [{"name": "n", "resourceClaimName": "c"}])},
        *extra,
    ]


@pytest.mark.parametrize(
    ("objects", "taint"),
    [
        (cluster(nic_node("n1", UNHEALTHY)), "kube-rdma.io/rdma-unhealthy:NoSchedule"),
        (
            cluster(nic_node("n1"), RULE),
            "kube-rdma.io/rdma-unhealthy:NoSchedule (from DeviceTaintRule n1-nic0)",
        ),
    ],
    ids=["in-its-slice", "by-a-rule"],
)
async def test_a_node_whose_only_nic_is_tainted_is_refused_naming_the_taint(
    objects: list[Json], taint: str
) -> None:
    found = await answers(objects, ["p"])
    assert found["filter p"] == {
        "Nodes": None,
        "NodeNames": ["n2"],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {
            "n1": f"rdma/hca: node has 0, pod needs 1 ({NIC0} tainted {taint}, not counted)"
        },
        "Error": "",
    }


async def test_a_tolerating_claim_is_still_not_counted_the_tainted_nic() -> None:
    """The counts every filter and gang plan read leave a tainted NIC out for every pod: a
    claim that tolerates the taint (which kube-scheduler would allocate the NIC) is refused
    there too, the one place the extender is stricter than the allocator
    (tests/kube_rdma/core/dra/test_taints_counters.py allocates it)."""
    tolerate = [{"key": "kube-rdma.io/rdma-unhealthy", "operator": "Exists"}]
    found = await answers(cluster(nic_node("n1"), RULE, tolerations=tolerate), ["p"])
    filtered = found["filter p"]
    assert isinstance(filtered, dict)
    assert filtered["NodeNames"] == ["n2"]


def _member(name: str) -> Json:
    member = nodes.pod(name, gpus=0, rdma={}, annotations={GANG: "g", GANG_SIZE: "2"})
    member["metadata"]["namespace"] = "default"
    member["spec"]["resourceClaims"] = [{"name": "n", "resourceClaimTemplateName": "one-nic"}]
    return member


async def test_a_gang_plan_does_not_count_a_tainted_nic() -> None:
    """Three nodes of one NIC each, n1's tainted by a rule: a gang of two one-NIC members is
    planned on n2 and n3, and n1 is refused to each member."""
    template: Json = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-nic", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [exactly("n", NIC_CLASS["metadata"]["name"])]}}},
    }
    members = [_member("m-0"), _member("m-1")]
    objects = [*nic_node("n1"), *nic_node("n2"), *nic_node("n3"), RULE, NIC_CLASS, template]
    found = await answers([*objects, *members], ["m-0", "m-1"])
    placed = []
    for name in ("m-0", "m-1"):
        filtered = found[f"filter {name}"]
        assert isinstance(filtered, dict)
        assert "n1" in filtered["FailedAndUnresolvableNodes"]
        placed += filtered["NodeNames"]
    assert sorted(placed) == ["n2", "n3"]
