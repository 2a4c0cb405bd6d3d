"""The DRA objects followed live, where the cluster serves them and once it starts to, and a gang
member's claims reserved again through the apiserver: every answer the apiserver can give."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping

import pytest

from extender.cluster.live import LiveSource
from extender.cluster.source import BindError
from kube_rdma.core.objects import Json
from testbed.fakeapi import RESOURCES, FakeApiServer, Resource, device_taint_rules, eventually
from tests.extender.cluster.following import following as following_api
from tests.kube_rdma.core.dra.fixtures import GPU_CLASS, gpu_slice

CLAIM_PATH = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/m-0-gpus"
NO_DRA = {k: r for k, r in RESOURCES.items() if r.group != "resource.k8s.io"}
WITH_RULES = {**RESOURCES, "devicetaintrules": device_taint_rules("1.37")}
"""As Kubernetes 1.37 serves DRA: DeviceTaintRules too."""
TERM = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
ALLOCATED = {"devices": {"results": []}, "nodeSelector": {"nodeSelectorTerms": [TERM]}}


@contextlib.asynccontextmanager
async def following(
    resources: Mapping[str, Resource] = WITH_RULES,
) -> AsyncIterator[tuple[FakeApiServer, LiveSource]]:
    async with FakeApiServer(resources) as api, following_api(api) as source:
        yield api, source


def member(api: FakeApiServer, entry: Json) -> Json:
    pod: Json = {
        "metadata": {"name": "m-0", "namespace": "team-a"},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": [entry]},
    }
    return api.create("pods", pod)


def claim(status: Json) -> Json:
    return {"metadata": {"name": "m-0-gpus"}, "spec": {"devices": {}}, "status": status}


async def test_dra_served_later_is_followed_once_discovery_finds_it() -> None:
    async with following(NO_DRA) as (api, source):
        assert source.cluster.dra.classes == {}
        for key, resource in RESOURCES.items():
            if resource.group == "resource.k8s.io":
                api.install(key, resource)
        api.create("deviceclasses", GPU_CLASS)
        api.create("resourceslices", gpu_slice("n1"))
        await eventually(lambda: "gpu.nvidia.com" in source.cluster.dra.classes)
        await eventually(lambda: source.cluster.dra.node("n1") is not None)


async def test_classes_and_templates_follow_their_watch_events() -> None:
    async with following() as (api, source):
        dra = source.cluster.dra
        await eventually(lambda: len(source.dra_reflectors) == 5 and api.watching >= 7)
        api.create("deviceclasses", GPU_CLASS)
        template = {"metadata": {"name": "t"}, "spec": {"spec": {"devices": {}}}}
        api.create("resourceclaimtemplates", template, "team-a")
        await eventually(
            lambda: "gpu.nvidia.com" in dra.classes and ("team-a", "t") in dra.templates
        )
        api.delete("deviceclasses", "gpu.nvidia.com")
        api.delete("resourceclaimtemplates", "t", "team-a")
        await eventually(lambda: dra.classes == {} and dra.templates == {})


@pytest.mark.parametrize(
    ("status", "entry", "error"),
    [
        (
            {},
            {"name": "gpus", "resourceClaimName": "m-0-gpus"},
            "ResourceClaim team-a/m-0-gpus is no longer allocated",
        ),
        (
            None,
            {"name": "gpus", "resourceClaimTemplateName": "t"},
            "pod team-a/m-0: its claims gpus are not created yet",
        ),
    ],
)
async def test_claims_that_cannot_be_reserved_fail_the_bind(
    status: Json | None, entry: Json, error: str
) -> None:
    async with following() as (api, source):
        if status is not None:
            api.create("resourceclaims", claim(status), "team-a")
        await eventually(lambda: all(r.synced.is_set() for r in source.dra_reflectors))
        with pytest.raises(BindError) as failed:
            await source.reserve_claims(member(api, entry), "n1")
    assert str(failed.value) == error


async def test_a_reserved_claim_is_left_alone_and_a_conflict_is_read_again() -> None:
    async with following() as (api, source):
        await eventually(lambda: all(r.synced.is_set() for r in source.dra_reflectors))
        pod = member(api, {"name": "gpus", "resourceClaimName": "m-0-gpus"})
        api.create("resourceclaims", claim({"allocation": ALLOCATED}), "team-a")
        api.fail("PUT", CLAIM_PATH + "/status", 409)
        await source.reserve_claims(pod, "n1")
        stored = api.get("resourceclaims", "m-0-gpus", "team-a")["status"]["reservedFor"]
        assert [e["uid"] for e in stored] == [pod["metadata"]["uid"]]
        before = len(api.requests)
        await source.reserve_claims(pod, "n1")  # already reserved: read, not written
        claim_calls = [r.method for r in api.requests[before:] if r.path.startswith(CLAIM_PATH)]
        assert claim_calls == ["GET"]
        api.fail("GET", CLAIM_PATH, 500)
        with pytest.raises(BindError, match="cannot reserve ResourceClaim team-a/m-0-gpus: "):
            await source.reserve_claims(pod, "n1")
        api.fail("PUT", CLAIM_PATH + "/status", 409, times=3)
        api.patch(
            "resourceclaims", "m-0-gpus", {"status": {"reservedFor": None}}, namespace="team-a"
        )
        with pytest.raises(BindError, match="it kept changing under the update"):
            await source.reserve_claims(pod, "n1")


async def test_a_cluster_without_dra_cannot_reserve_claims() -> None:
    async with following(NO_DRA) as (api, source):
        pod = member(api, {"name": "gpus", "resourceClaimName": "m-0-gpus"})
        with pytest.raises(BindError) as failed:
            await source.reserve_claims(pod, "n1")
    assert (
        str(failed.value) == "pod team-a/m-0 has resource claims, and the cluster serves no DRA API"
    )
