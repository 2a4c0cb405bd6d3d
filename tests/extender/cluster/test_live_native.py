"""Kubernetes' own gang objects followed live: scheduling.k8s.io PodGroups of every version the
extender reads (here v1alpha3, 1.37's alpha), listed and watched where discovery finds them
served, and a served version it does not read named once in a warning, its objects absent."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest
from kubernetes_asyncio import client

from extender.cluster.live import LiveSource
from kube_rdma.core.frameworks.kubernetes_scheduling import GroupRef
from testbed.fakeapi import RESOURCES, FakeApiServer, Resource, eventually, native_gang_resources

NS = "team-a"


def podgroup(version: str, name: str, min_count: int) -> dict[str, object]:
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}  # fmt: skip


async def test_podgroups_are_followed_in_each_served_version_and_others_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    newer = Resource("PodGroup", True, "scheduling.k8s.io/v2", "podgroups")
    resources = {**RESOURCES, **native_gang_resources("v1alpha3"), "podgroups.v2": newer}
    async with FakeApiServer(resources) as api, api.api_client() as api_client:
        api.create("podgroups.scheduling.k8s.io", podgroup("v1alpha3", "llama", 4))
        api.create("podgroups.v2", podgroup("v2", "qwen", 2))
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)

        async def no_sleep(delay: float) -> None:
            await asyncio.sleep(0.01)

        source = LiveSource(core, custom_api=custom, sleep=no_sleep)
        find = source.cluster.native.find

        def min_count(name: str) -> int | None:
            found = find(NS, GroupRef("PodGroup", name))
            return None if found is None else found.min_count

        with caplog.at_level(logging.WARNING):
            task = asyncio.create_task(source.run())
            try:
                await eventually(lambda: min_count("llama") == 4)
                api.patch(
                    "podgroups.scheduling.k8s.io",
                    "llama",
                    {"spec": {"schedulingPolicy": {"gang": {"minCount": 6}}}},
                    namespace=NS,
                )
                await eventually(lambda: min_count("llama") == 6)
                api.delete("podgroups.scheduling.k8s.io", "llama", namespace=NS)
                await eventually(lambda: min_count("llama") is None)
                await eventually(lambda: any("v2" in r.getMessage() for r in caplog.records))
                assert min_count("qwen") is None, "a version not read is read as absent"
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    warned = [r.getMessage() for r in caplog.records if "scheduling.k8s.io/v2" in r.getMessage()]
    assert warned == [
        "scheduling.k8s.io serves scheduling.k8s.io/v2, which kube-rdma does not read (it reads "
        "v1alpha1, v1alpha2, v1alpha3, v1beta1): objects there are read as absent"
    ]
