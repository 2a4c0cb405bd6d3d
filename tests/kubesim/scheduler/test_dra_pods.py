"""How a DRA pod reaches the extender. kube-scheduler calls an extender only for a pod with a
container or init container that requests or limits one of its managedResources, or for every
pod when the list is empty (kubernetes pkg/scheduler/extender.go, HTTPExtender.IsInterested).
A pod whose GPUs and NICs come from resource claims requests no extended resource, so only an
empty list brings it to the extender; a pod asking for `nvidia.com/gpu` that a DeviceClass's
`extendedResourceName` serves (KEP-5004) reaches it either way."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from extender.app import Settings, create_app
from extender.cluster.live import LiveSource
from kube_rdma.core.objects import Json
from kubesim.scheduler import EmulatedScheduler, SchedulerConfig
from kubesim.scheduler.extender_client import ExtenderClient
from testbed.fakeapi import RESOURCES, FakeApiServer, eventually
from testbed.net import serving
from tests.kube_rdma.core.dra.fixtures import GPU_CLASS, NIC_CLASS, claim, gpu_slice, nic_slice
from tests.kubesim.scheduler.cluster import FAST, node

HELD = [("gpu.nvidia.com", "full", f"gpu-{i}") for i in range(8)]
TEMPLATE: Json = {
    "metadata": {"name": "eight", "namespace": "team-a"},
    "spec": {
        "spec": {
            "devices": {
                "requests": [
                    {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}
                ]
            }
        }
    },
}


def claim_pod(name: str = "dra") -> Json:
    return {
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {
            "containers": [{"name": "c", "resources": {"claims": [{"name": "gpus"}]}}],
            "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight"}],
        },
    }


def extended_pod(where: str) -> Json:
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
    return {"metadata": {"name": "x"}, "spec": {where: [container]}}


@pytest.mark.parametrize(
    ("pod", "managed", "interested"),
    [
        (claim_pod(), ("nvidia.com/gpu", "rdma/hca"), False),
        (claim_pod(), (), True),
        (extended_pod("containers"), ("nvidia.com/gpu", "rdma/hca"), True),
        (extended_pod("initContainers"), ("nvidia.com/gpu",), True),
        (extended_pod("containers"), ("rdma/hca",), False),
    ],
)
def test_is_interested(pod: Json, managed: tuple[str, ...], interested: bool) -> None:
    config = SchedulerConfig(managed_resources=managed)
    extender = ExtenderClient("http://unused", config, post=None, node=lambda name: None)  # type: ignore[arg-type]
    assert extender.interested(pod) is interested


def populate(api: FakeApiServer) -> None:
    for name in ("full", "free"):
        api.create(
            "nodes",
            {
                "metadata": {"name": name},
                "status": {
                    "allocatable": {"cpu": "96", "memory": "1Ti", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            },
        )
        api.create("resourceslices", gpu_slice(name))
        api.create("resourceslices", nic_slice(name))
    api.create("deviceclasses", GPU_CLASS)
    api.create("deviceclasses", NIC_CLASS)
    api.create("resourceclaimtemplates", TEMPLATE, "team-a")
    api.create("resourceclaims", claim("held", [], "team-a", allocated=HELD), "team-a")


def full_gpus_free(source: LiveSource) -> int | None:
    """The full node's free GPUs, once the classes and the template are followed too."""
    node, dra = source.cluster.node("full"), source.cluster.dra
    if node is None or len(dra.classes) < 2 or not dra.templates:
        return None
    return node.free("nvidia.com/gpu")


@pytest.mark.parametrize(
    ("managed", "via"), [((), "extender"), (("nvidia.com/gpu", "rdma/hca"), "apiserver")]
)
async def test_only_an_empty_managed_resources_brings_a_claim_pod_to_the_extender(
    fake_api: FakeApiServer, core_v1: Any, managed: tuple[str, ...], via: str
) -> None:
    populate(fake_api)
    source = LiveSource(core_v1, custom_api=client.CustomObjectsApi(core_v1.api_client))
    config = SchedulerConfig(
        backoff_initial=FAST.backoff_initial,
        backoff_max=FAST.backoff_max,
        managed_resources=managed,
    )
    async with serving(create_app(Settings(), source)) as url:
        await eventually(lambda: full_gpus_free(source) == 0)
        async with EmulatedScheduler(fake_api.host, url, config) as scheduler:
            fake_api.create("pods", claim_pod())
            await eventually(lambda: len(scheduler.queue) == 1)
            await scheduler.step()
            await eventually(lambda: len(scheduler.binds) == 1)
    [bind] = scheduler.binds
    assert (bind.via, bind.ok) == (via, True)
    # The extender, or the emulated DynamicResources filter alone, saw the claim's 8 GPUs:
    # only the node with all 8 free passes. The claim made from the template is allocated
    # there and reserved for the pod.
    placed = fake_api.get("pods", "dra", "team-a")
    assert placed["spec"]["nodeName"] == "free"
    [generated] = placed["status"]["resourceClaimStatuses"]
    claim = fake_api.get("resourceclaims", generated["resourceClaimName"], "team-a")
    assert claim["metadata"]["ownerReferences"][0]["name"] == "dra"
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [("free", f"gpu-{i}") for i in range(8)]
    reserved = [(r["name"], r["uid"]) for r in claim["status"]["reservedFor"]]
    assert reserved == [("dra", placed["metadata"]["uid"])]


async def test_a_claim_pod_where_dra_is_not_served_is_unschedulable() -> None:
    no_dra = {k: r for k, r in RESOURCES.items() if r.group != "resource.k8s.io"}
    config = SchedulerConfig(backoff_initial=FAST.backoff_initial, use_extender=False)
    async with FakeApiServer(no_dra) as api:
        api.create("nodes", node("n1"))
        async with EmulatedScheduler(api.host, None, config) as scheduler:
            api.create("pods", claim_pod())
            await eventually(lambda: len(scheduler.queue) == 1)
            attempt = await scheduler.step()
    assert attempt is not None
    assert (attempt.outcome, attempt.message) == (
        "unschedulable",
        "0/1 nodes are available: 1 ResourceClaimTemplate team-a/eight does not exist. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    )
