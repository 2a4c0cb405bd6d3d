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
from testbed.fakeapi import RESOURCES, WORKLOAD_RESOURCES, FakeApiServer, eventually

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
