"""DRA objects followed live against the fake apiserver: an allocated claim makes its devices
busy, deleting it frees them, and the filter's answer follows; on a cluster that serves only
resource.k8s.io/v1beta1 the same objects are read at that version."""

from __future__ import annotations

from extender.cluster.live import LiveSource
from extender.engine import Engine
from extender.filters import Verdict
from extender.podview import pod_view
from extender.weights import DEFAULT
from kube_rdma.core.objects import Json
from testbed.fakeapi import RESOURCES, FakeApiServer, Resource, eventually
from tests.extender.cluster.following import following
from tests.kube_rdma.core.dra.fixtures import (
    GPU_CLASS,
    NIC_CLASS,
    claim,
    exactly,
    gpu_slice,
    nic_slice,
    pod,
)

GPU = "nvidia.com/gpu"
HELD = [("gpu.nvidia.com", "n1", f"gpu-{i}") for i in range(6)]
NODE: Json = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "96"}}}


def populate(api: FakeApiServer) -> None:
    api.create("nodes", NODE)
    api.create("resourceslices", gpu_slice("n1"))
    api.create("resourceslices", nic_slice("n1"))
    api.create("deviceclasses", GPU_CLASS)
    api.create("deviceclasses", NIC_CLASS)
    api.create("resourceclaims", claim("four", [exactly("g", "gpu.nvidia.com", 4)]), "default")


def free_gpus(source: LiveSource) -> int | None:
    """n1's free GPUs, once the classes and the claim the tests ask with are followed too."""
    node, dra = source.cluster.node("n1"), source.cluster.dra
    if node is None or len(dra.classes) < 2 or ("default", "four") not in dra.claims:
        return None
    return node.free(GPU)


def verdict(source: LiveSource) -> Verdict:
    cluster = source.cluster
    wants = pod("p", [{"name": "g", "resourceClaimName": "four"}])
    view = pod_view(wants, demand=cluster.claim_demand(wants), selectors=cluster.selectors)
    return Engine(cluster, lambda: DEFAULT).verdict(view, "n1")


async def test_an_allocated_claim_holds_devices_until_it_is_deleted() -> None:
    async with FakeApiServer() as api:
        populate(api)
        async with following(api) as source:
            await eventually(lambda: free_gpus(source) == 8)
            node = source.cluster.node("n1")
            assert node is not None
            assert node.allocatable == {GPU: 8, "rdma/hca": 8}
            assert verdict(source) == Verdict(True)

            api.create("resourceclaims", claim("busy", [], allocated=HELD), "default")
            await eventually(lambda: free_gpus(source) == 2)
            assert verdict(source) == Verdict(
                False, "nvidia.com/gpu: 2 of 8 free, pod needs 4", resolvable=True
            )

            api.delete("resourceclaims", "busy", "default")
            await eventually(lambda: free_gpus(source) == 8)
            assert verdict(source) == Verdict(True)


async def test_a_cluster_serving_only_v1beta1_is_read_at_v1beta1() -> None:
    v1beta1 = {
        key: (
            Resource(r.kind, r.namespaced, api_version="resource.k8s.io/v1beta1")
            if r.group == "resource.k8s.io"
            else r
        )
        for key, r in RESOURCES.items()
    }
    async with FakeApiServer(v1beta1) as api:
        populate(api)
        api.create("resourceclaims", claim("busy", [], allocated=HELD), "default")
        async with following(api) as source:
            await eventually(lambda: free_gpus(source) == 2)
    lists = {r.path for r in api.requests if "resource.k8s.io" in r.path and not r.watch}
    assert "/apis/resource.k8s.io/v1beta1/resourceslices" in lists
    assert not any(p.startswith("/apis/resource.k8s.io/v1/") for p in lists)


async def test_a_claim_pod_whose_template_is_missing_fails_every_node() -> None:
    async with FakeApiServer() as api:
        populate(api)
        async with following(api) as source:
            await eventually(lambda: free_gpus(source) == 8)
            cluster = source.cluster
            lost = pod("p", [{"name": "g", "resourceClaimTemplateName": "gone"}])
            view = pod_view(lost, demand=cluster.claim_demand(lost), selectors=cluster.selectors)
            assert Engine(cluster, lambda: DEFAULT).verdict(view, "n1") == Verdict(
                False, "ResourceClaimTemplate default/gone does not exist", resolvable=False
            )


async def test_explain_lists_the_nodes_dra_would_refuse() -> None:
    async with FakeApiServer() as api:
        populate(api)
        api.create("nodes", {**NODE, "metadata": {"name": "n2"}})
        api.create("resourceslices", gpu_slice("n2", gpus=2))
        rule = 'device.attributes["gpu.nvidia.com"].index <= 1'
        api.create("resourceclaims", claim("low", [exactly("g", "gpu.nvidia.com", 2, rule)]))
        api.create("resourceclaims", claim("busy", [], allocated=HELD[:1]), "default")
        async with following(api) as source:
            await eventually(lambda: free_gpus(source) == 7)
            cluster = source.cluster
            wants = pod("p", [{"name": "g", "resourceClaimName": "low"}])
            view = pod_view(wants, demand=cluster.claim_demand(wants), selectors=cluster.selectors)
            found = Engine(cluster, lambda: DEFAULT).explain(view)
    verdicts = {a.node: a.verdict for a in found}
    assert verdicts == {
        "n1": Verdict(
            False,
            "DRA would refuse: claim default/low request g: 1 of 2 matching GPU(s) free, needs 2",
            resolvable=True,
        ),
        "n2": Verdict(True),
    }
