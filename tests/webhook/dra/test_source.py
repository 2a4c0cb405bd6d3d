"""The webhook's DRA reads against the fake apiserver, through kubernetes-asyncio: the version
discovery finds (v1, else v1beta2, else v1beta1), a GET per object and nothing else, and the
webhook's RBAC is exactly those GETs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client

from kube_rdma.core.documents import DocumentError
from kube_rdma.core.objects import Json
from testbed.builders import pods
from testbed.fakeapi import RESOURCES, FakeApiServer, Resource
from tests.webhook.dra.objects import ROOT, device_classes, placed, template
from webhook.admission import Admitter
from webhook.dra.source import CLASSES, TEMPLATES, DraUnavailable, LiveDra, StaticDra
from webhook.namespaces import StaticNamespaces
from webhook.profile_store import ProfileStore

KINDS = {
    "deviceclasses": ("DeviceClass", False),
    "resourceclaims": ("ResourceClaim", True),
    "resourceclaimtemplates": ("ResourceClaimTemplate", True),
}


def dra_resources(version: str) -> dict[str, Resource]:
    """resource.k8s.io served at one version, as a 1.34 (v1), 1.33 (v1beta2) or 1.32 (v1beta1)
    apiserver serves it by default."""
    return {
        plural: Resource(kind, namespaced, f"resource.k8s.io/{version}", plural)
        for plural, (kind, namespaced) in KINDS.items()
    }


async def serving(version: str | None) -> FakeApiServer:
    """A fake apiserver serving resource.k8s.io at `version` only (at none: None)."""
    others = {
        k: r for k, r in RESOURCES.items() if not r.api_version.startswith("resource.k8s.io/")
    }
    resources = others | (dra_resources(version) if version else {})
    server = FakeApiServer(resources)
    await server.start()
    return server


@pytest.fixture
async def v1_api() -> AsyncIterator[FakeApiServer]:
    server = await serving("v1")
    yield server
    await server.stop()


def calls(server: FakeApiServer) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in server.requests]


@pytest.mark.parametrize(
    ("version", "discovered"),
    [("v1", ["v1"]), ("v1beta2", ["v1", "v1beta2"]), ("v1beta1", ["v1", "v1beta2", "v1beta1"])],
)
async def test_reads_the_newest_version_served(version: str, discovered: list[str]) -> None:
    server = await serving(version)
    try:
        gpu = placed(template("single-gpu", "resource.k8s.io/v1beta1"), "team-a")
        server.create(TEMPLATES, gpu, "team-a")
        server.create(CLASSES, device_classes()[0])
        async with server.api_client() as api:
            source = LiveDra(client.CustomObjectsApi(api))
            got = await source.get(TEMPLATES, "team-a", "single-gpu")
            again = await source.get(TEMPLATES, "team-a", "single-gpu")
            gpu_class = await source.get(CLASSES, None, "gpu.nvidia.com")
    finally:
        await server.stop()
    assert got is not None
    assert again == got
    assert got["spec"] == gpu["spec"]
    assert gpu_class is not None
    assert gpu_class["metadata"]["name"] == "gpu.nvidia.com"
    group = "/apis/resource.k8s.io"
    templates = f"{group}/{version}/namespaces/team-a/resourceclaimtemplates/single-gpu"
    assert calls(server) == [
        *(("GET", f"{group}/{v}") for v in discovered),
        ("GET", templates),
        ("GET", templates),
        # the version found is remembered; those not served are asked about again
        *(("GET", f"{group}/{v}") for v in discovered[:-1]),
        ("GET", f"{group}/{version}/deviceclasses/gpu.nvidia.com"),
    ]


async def test_no_dra_served_and_no_object_read_as_none() -> None:
    server = await serving(None)
    try:
        async with server.api_client() as api:
            source = LiveDra(client.CustomObjectsApi(api))
            assert await source.get(TEMPLATES, "team-a", "single-gpu") is None
    finally:
        await server.stop()
    assert [path for _, path in calls(server)] == [
        "/apis/resource.k8s.io/v1",
        "/apis/resource.k8s.io/v1beta2",
        "/apis/resource.k8s.io/v1beta1",
    ]


async def test_a_missing_object_is_none(v1_api: FakeApiServer) -> None:
    async with v1_api.api_client() as api:
        source = LiveDra(client.CustomObjectsApi(api))
        assert await source.get(TEMPLATES, "team-a", "nothing-here") is None


async def test_an_apiserver_error_is_unavailable(v1_api: FakeApiServer) -> None:
    path = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaimtemplates/single-gpu"
    v1_api.fail("GET", path, 500)
    async with v1_api.api_client() as api:
        source = LiveDra(client.CustomObjectsApi(api))
        with pytest.raises(DraUnavailable) as raised:
            await source.get(TEMPLATES, "team-a", "single-gpu")
    assert str(raised.value) == (
        "get resource.k8s.io/v1 resourceclaimtemplates team-a/single-gpu: InternalError: fake "
        "apiserver: injected failure"
    )


def webhook_dra_rules() -> list[Json]:
    docs = yaml.safe_load_all((ROOT / "manifests" / "webhook" / "rbac.yaml").read_text())
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    return [r for r in role["rules"] if r["apiGroups"] == ["resource.k8s.io"]]


def authorized_as(path: str, method: str) -> tuple[str, str, str] | None:
    """(apiGroup, resource, verb) of a request naming one object of resource.k8s.io; None for
    discovery, which every authenticated client may read (system:discovery)."""
    parts = path.strip("/").split("/")
    if len(parts) == 3:
        return None
    assert parts[:2] == ["apis", "resource.k8s.io"], path
    assert method == "GET", path
    return "resource.k8s.io", parts[-2], "get"


async def test_the_webhook_rbac_is_exactly_what_it_reads(
    v1_api: FakeApiServer, tmp_path: Path
) -> None:
    """Two reviews that read every kind: a pod naming a ResourceClaim whose class (dranet.net)
    the profile lists only by driver, and a pod that the profile attaches a template to."""
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(
        "profiles:\n  default:\n    dra:\n      claimTemplates: {4: rdma-gpu-nic-8}\n"
    )
    for cls in device_classes():
        v1_api.create(CLASSES, cls)
    pair = placed(template("rdma-gpu-nic-8"), "team-a")
    v1_api.create(TEMPLATES, pair, "team-a")
    nics = placed(template("h100-4gpu-4nic-numa-aligned"), "team-a")
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared-nics", "namespace": "team-a"},
        "spec": nics["spec"]["spec"],
    }
    v1_api.create("resourceclaims", claim, "team-a")
    claimed = pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/inject": "true"})
    claimed["spec"]["containers"][0]["resources"]["claims"] = [{"name": "nics"}]
    claimed["spec"]["resourceClaims"] = [{"name": "nics", "resourceClaimName": "shared-nics"}]
    attached = pods.pytorchjob("worker", 1, "team-a", {"kube-rdma.io/inject": "true"})
    for kind in ("limits", "requests"):
        attached["spec"]["containers"][0]["resources"][kind]["nvidia.com/gpu"] = "4"
    async with v1_api.api_client() as api:
        source = LiveDra(client.CustomObjectsApi(api))
        admitter = Admitter(ProfileStore(profiles), StaticNamespaces(), "kube-rdma", dra=source)
        decisions = [await admitter.review(pods.request(p)) for p in (claimed, attached)]
    assert [d.outcome for d in decisions] == ["patched", "patched"]
    reads = [authorized_as(r.path, r.method) for r in v1_api.requests]
    assert sorted({r for r in reads if r is not None}) == [
        ("resource.k8s.io", "deviceclasses", "get"),
        ("resource.k8s.io", "resourceclaims", "get"),
        ("resource.k8s.io", "resourceclaimtemplates", "get"),
    ]
    assert webhook_dra_rules() == [
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["deviceclasses", "resourceclaims", "resourceclaimtemplates"],
            "verbs": ["get"],
        }
    ]


async def test_an_unanswered_read_denies_the_pod(v1_api: FakeApiServer, tmp_path: Path) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text("profiles:\n  default: {}\n")
    path = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaimtemplates/single-gpu"
    v1_api.fail("GET", path, 503)
    pod = pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/inject": "true"})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]
    async with v1_api.api_client() as api:
        source = LiveDra(client.CustomObjectsApi(api))
        admitter = Admitter(ProfileStore(profiles), StaticNamespaces(), "kube-rdma", dra=source)
        decision = await admitter.review(pods.request(pod))
    assert decision.outcome == "denied"
    assert decision.response["response"]["status"]["message"] == (
        "kube-rdma could not read the pod's DRA objects (get resource.k8s.io/v1 "
        "resourceclaimtemplates team-a/single-gpu: ServiceUnavailable: fake apiserver: injected "
        "failure); create the pod again once the apiserver answers"
    )


def test_a_file_stands_in_for_the_apiserver(tmp_path: Path) -> None:
    listed = tmp_path / "dra.yaml"
    gpu = placed(template("single-gpu"), "team-a")
    listed.write_text(yaml.safe_dump_all([{"kind": "List", "items": [gpu]}, *device_classes()]))
    source = StaticDra.from_file(listed)
    assert asyncio.run(source.get(TEMPLATES, "team-a", "single-gpu")) == gpu
    assert asyncio.run(source.get(TEMPLATES, "team-b", "single-gpu")) is None
    assert asyncio.run(source.get(CLASSES, None, "dranet")) == device_classes()[5]
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [")
    with pytest.raises(DocumentError) as error:
        StaticDra.from_file(broken)
    assert str(error.value).startswith(f"DRA objects file {broken}: ")


async def test_one_review_reads_each_object_once(v1_api: FakeApiServer, tmp_path: Path) -> None:
    """A claim-only training pod in a labelled namespace is read to decide the opt-in and again
    to mutate it: one GET per object all the same."""
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text("profiles:\n  default: {}\n")
    for cls in device_classes():
        v1_api.create(CLASSES, cls)
    v1_api.create(TEMPLATES, placed(template("2-gpu-nic-aligned"), "ml"), "ml")
    pod = pods.pytorchjob("worker", 0, "ml", {})
    for kind in ("limits", "requests"):
        del pod["spec"]["containers"][0]["resources"][kind]["nvidia.com/gpu"]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "pairs"}]
    pod["spec"]["resourceClaims"] = [
        {"name": "pairs", "resourceClaimTemplateName": "2-gpu-nic-aligned"}
    ]
    labelled = StaticNamespaces({"ml": {"kube-rdma.io/injection": "enabled"}})
    async with v1_api.api_client() as api:
        source = LiveDra(client.CustomObjectsApi(api))
        admitter = Admitter(ProfileStore(profiles), labelled, "kube-rdma", dra=source)
        decision = await admitter.review(pods.request(pod))
    assert decision.outcome == "patched"
    group = "/apis/resource.k8s.io/v1"
    assert calls(v1_api) == [
        ("GET", group),
        ("GET", f"{group}/namespaces/ml/resourceclaimtemplates/2-gpu-nic-aligned"),
        ("GET", f"{group}/deviceclasses/dranet"),
    ]
