"""The emulated kube-scheduler's DynamicResources plugin and consumable capacity: claims that
share a NIC (one that allows multiple allocations) consume its bandwidth, through the shared
allocator (kube_rdma/core/dra), whether the earlier claims are in flight (reserved) or
allocated (written at PreBind with a shareID and their consumedCapacity)."""

from __future__ import annotations

import copy
from typing import Any

from kube_rdma.core.objects import Json
from kubesim.scheduler.dynamicresources import DynamicResources
from tests.kube_rdma.core.dra.fixtures import claim, device_class, exactly, slice_

NIC = {
    "name": "eth1",
    "allowMultipleAllocations": True,
    "capacity": {"bandwidth": {"value": "100G"}},
}


class Calls:
    """resource.k8s.io in memory."""

    def __init__(self, objects: dict[str, list[Json]]) -> None:
        self.objects = objects

    async def list(self, plural: str) -> list[Json]:
        return copy.deepcopy(self.objects.get(plural, []))

    async def get_claim(self, namespace: str, name: str) -> Json:
        return copy.deepcopy(next(c for c in self.objects["resourceclaims"] if _is(c, name)))

    async def update_claim_status(self, namespace: str, name: str, obj: Json) -> Json:
        claims = self.objects["resourceclaims"]
        claims[:] = [obj if _is(c, name) else c for c in claims]
        return obj

    async def create_claim(self, namespace: str, obj: Json) -> Json:
        raise AssertionError("no templates here")


def _is(obj: Json, name: str) -> bool:
    return bool(obj["metadata"]["name"] == name)


def wants(name: str, amount: str) -> Json:
    request = exactly("nic", "shared-nic")
    request["exactly"]["capacity"] = {"requests": {"bandwidth": amount}}
    return claim(name, [request])


def pod(name: str) -> Json:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"resourceClaims": [{"name": "nic", "resourceClaimName": name}]},
    }


def plugin() -> tuple[DynamicResources, Calls]:
    calls = Calls(
        {
            "resourceslices": [slice_("n1-nic", "n1", "dra.net", [NIC])],
            "deviceclasses": [device_class("shared-nic", "device.driver == 'dra.net'")],
            "resourceclaims": [wants("a", "60G"), wants("b", "30G"), wants("c", "20G")],
        }
    )
    return DynamicResources(calls), calls


async def test_claims_share_a_nic_until_its_bandwidth_is_spent() -> None:
    dra, _ = plugin()
    await dra.refresh()
    assert dra.checker(pod("a"))("n1") is None
    dra.reserve(pod("a"), "n1")
    assert dra.checker(pod("b"))("n1") is None, "60G of 100G in flight: 30G more fits"
    assert dra.checker(pod("c"))("n1") is None
    dra.reserve(pod("b"), "n1")
    assert dra.checker(pod("c"))("n1") == (
        "claim default/c request nic: no matching device has the capacity asked: on eth1, "
        "capacity bandwidth: 20000000000 asked, 10000000000 of 100000000000 left"
    )


async def test_prebind_writes_the_share_and_what_it_consumes_which_later_cycles_count() -> None:
    dra, calls = plugin()
    await dra.refresh()
    dra.reserve(pod("a"), "n1")
    await dra.prebind(pod("a"), "n1")
    written: Any = next(c for c in calls.objects["resourceclaims"] if _is(c, "a"))
    [result] = written["status"]["allocation"]["devices"]["results"]
    assert result["consumedCapacity"] == {"bandwidth": "60000000000"}
    assert result["shareID"]
    assert {k: result[k] for k in ("request", "driver", "pool", "device")} == {
        "request": "nic",
        "driver": "dra.net",
        "pool": "n1",
        "device": "eth1",
    }
    fresh = DynamicResources(calls)
    await fresh.refresh()
    assert fresh.checker(pod("b"))("n1") is None
    calls.objects["resourceclaims"].append(wants("d", "50G"))
    await fresh.refresh()
    assert fresh.checker(pod("d"))("n1") == (
        "claim default/d request nic: no matching device has the capacity asked: on eth1, "
        "capacity bandwidth: 50000000000 asked, 40000000000 of 100000000000 left"
    )
