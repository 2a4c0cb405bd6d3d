"""The emulated DynamicResources filter honours device taints through the shared allocator: a
node whose only RDMA NIC is tainted, in its slice or by a DeviceTaintRule, cannot take a claim
that does not tolerate the taint, and the reason names it (k8s.io/dynamic-resource-allocation
structured/internal allocateDevice, taintPreventsAllocation); a tolerating claim gets it."""

from __future__ import annotations

import pytest

from kube_rdma.core.objects import Json
from kubesim.scheduler.dynamicresources import DynamicResources
from kubesim.simulate.dra import DraStore
from tests.kube_rdma.core.dra.fixtures import NIC_CLASS, claim, exactly, nic, pod, slice_

NIC0 = "pci-0000-20-00-0"
UNHEALTHY = {"key": "kube-rdma.io/rdma-unhealthy", "effect": "NoSchedule"}
RULE: Json = {
    "apiVersion": "resource.k8s.io/v1beta2",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "n1-nic0"},
    "spec": {"deviceSelector": {"pool": "n1", "device": NIC0}, "taint": UNHEALTHY},
}


def nic_slice(node: str, *taints: Json) -> Json:
    device = {**nic(0), "taints": list(taints)} if taints else nic(0)
    return slice_(f"{node}-nic", node, "dra.net", [device])


def one_nic(tolerations: list[Json] | None = None) -> Json:
    request = exactly("n", NIC_CLASS["metadata"]["name"])
    if tolerations is not None:
        request["exactly"]["tolerations"] = tolerations
    return claim("c", [request])


@pytest.mark.parametrize(
    ("objects", "taint"),
    [
        ([nic_slice("n1", UNHEALTHY)], "kube-rdma.io/rdma-unhealthy:NoSchedule"),
        (
            [nic_slice("n1"), RULE],
            "kube-rdma.io/rdma-unhealthy:NoSchedule (from DeviceTaintRule n1-nic0)",
        ),
    ],
    ids=["in-its-slice", "by-a-rule"],
)
async def test_a_tainted_nic_is_not_allocated(objects: list[Json], taint: str) -> None:
    plugin = DynamicResources(DraStore([*objects, nic_slice("n2"), NIC_CLASS, one_nic()]))
    await plugin.refresh()
    check = plugin.checker(pod("p", [{"name": "n", "resourceClaimName": "c"}]))
    assert check("n1") == (
        f"claim default/c request n: 0 of 1 matching RDMA NIC(s) free, needs 1: {NIC0} (pool "
        f"n1 of dra.net) tainted {taint}, not tolerated"
    )
    assert check("n2") is None


async def test_a_tolerating_claim_gets_the_tainted_nic() -> None:
    tolerate = [{"key": "kube-rdma.io/rdma-unhealthy", "operator": "Exists"}]
    plugin = DynamicResources(DraStore([nic_slice("n1"), RULE, NIC_CLASS, one_nic(tolerate)]))
    await plugin.refresh()
    check = plugin.checker(pod("p", [{"name": "n", "resourceClaimName": "c"}]))
    assert check("n1") is None
