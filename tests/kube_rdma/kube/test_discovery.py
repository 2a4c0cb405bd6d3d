"""API discovery against the fake apiserver: which resources a group version serves, and a
waiter that says once that a resource is absent and finds it when its CRD is installed later."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

from kube_rdma.kube.client import call
from kube_rdma.kube.discovery import ApiResource, Discovery
from testbed.fakeapi import (
    RESOURCES,
    WORKLOAD_RESOURCES,
    FakeApiServer,
    Resource,
    eventually,
    native_gang_resources,
)

PODGROUPS = ApiResource("scheduling.x-k8s.io", "v1alpha1", "podgroups")
JOBSETS = ApiResource("jobset.x-k8s.io", "v1alpha2", "jobsets")
BATCH_JOBS = ApiResource("batch", "v1", "jobs")


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    served = {"jobs.batch": WORKLOAD_RESOURCES["jobs.batch"]}
    async with FakeApiServer({**RESOURCES, **served}) as server:
        yield server


@pytest.fixture
async def custom(api: FakeApiServer) -> AsyncIterator[client.CustomObjectsApi]:
    async with api.api_client() as api_client:
        yield client.CustomObjectsApi(api_client)


async def test_serves(api: FakeApiServer, custom: client.CustomObjectsApi) -> None:
    discovery = Discovery(custom.get_api_resources)
    wrong_plural = ApiResource("batch", "v1", "cronjobs")
    found = [await discovery.serves(r) for r in (BATCH_JOBS, PODGROUPS, wrong_plural)]
    assert found == [True, False, False]
    assert [r.path for r in api.requests] == [
        "/apis/batch/v1",
        "/apis/scheduling.x-k8s.io/v1alpha1",
        "/apis/batch/v1",
    ]


async def test_the_fake_answers_discovery_as_an_apiserver_does(
    api: FakeApiServer, custom: client.CustomObjectsApi
) -> None:
    assert await call("discover", custom.get_api_resources, "batch", "v1") == {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "batch/v1",
        "resources": [
            {
                "name": "jobs",
                "singularName": "job",
                "namespaced": True,
                "kind": "Job",
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            }
        ],
    }


async def test_waits_quietly_for_a_crd_installed_later(
    api: FakeApiServer, custom: client.CustomObjectsApi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kube_rdma.kube.discovery")
    rechecks: list[float] = []

    async def sleep(delay: float) -> None:
        rechecks.append(delay)
        await asyncio.sleep(0.001)

    served = Discovery(custom.get_api_resources, recheck=300, sleep=sleep).waiter(JOBSETS)
    waiting = asyncio.create_task(served())
    await eventually(lambda: len(rechecks) >= 3)
    assert not waiting.done()
    api.install("jobsets.jobset.x-k8s.io", WORKLOAD_RESOURCES["jobsets.jobset.x-k8s.io"])
    await asyncio.wait_for(waiting, 2)
    assert set(rechecks) == {300}
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "INFO",
            "jobsets.jobset.x-k8s.io/v1alpha2 is not served by this cluster (its CRD is not "
            "installed); looking again every 300s",
        ),
        ("INFO", "jobsets.jobset.x-k8s.io/v1alpha2 is served now; listing it"),
    ]


async def test_asks_again_sooner_when_discovery_fails(
    api: FakeApiServer, custom: client.CustomObjectsApi
) -> None:
    api.fail("GET", "/apis/batch/v1", 503, times=2)
    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    await Discovery(custom.get_api_resources, retry=5, sleep=sleep).waiter(BATCH_JOBS)()
    assert sleeps == [5, 5]


async def test_the_versions_a_group_serves_and_those_not_read_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """GET /apis/GROUP answers the APIGroup (its `versions[].version`); a 404 is no version."""
    served = {
        **native_gang_resources("v1beta1"),
        "podgroups.v9": Resource("PodGroup", True, "scheduling.k8s.io/v9", "podgroups"),
    }
    async with FakeApiServer({**RESOURCES, **served}) as api, api.api_client() as api_client:
        scheduling = client.SchedulingApi(api_client)
        discovery = Discovery(client.CustomObjectsApi(api_client).get_api_resources)
        assert await discovery.versions(scheduling.get_api_group, "scheduling.k8s.io") == [
            "v1beta1",
            "v9",
        ]
        with caplog.at_level(logging.WARNING):
            unknown = await discovery.unknown_versions(
                scheduling.get_api_group, "scheduling.k8s.io", frozenset({"v1beta1"})
            )
        assert unknown == ["v9"]
        assert [r.getMessage() for r in caplog.records] == [
            "scheduling.k8s.io serves scheduling.k8s.io/v9, which kube-rdma does not read (it "
            "reads v1beta1): objects there are read as absent"
        ]
    async with FakeApiServer(RESOURCES) as bare, bare.api_client() as api_client:
        discovery = Discovery(client.CustomObjectsApi(api_client).get_api_resources)
        get_group = client.SchedulingApi(api_client).get_api_group
        assert await discovery.versions(get_group, "scheduling.k8s.io") == []


async def test_unknown_versions_are_asked_until_discovery_answers(api: FakeApiServer) -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async with api.api_client() as api_client:
        discovery = Discovery(client.CustomObjectsApi(api_client).get_api_resources, sleep=sleep)
        api.fail("GET", "/apis/scheduling.k8s.io/")
        get_group = client.SchedulingApi(api_client).get_api_group
        assert await discovery.unknown_versions(get_group, "scheduling.k8s.io", frozenset()) == []
    assert sleeps == [5.0]
