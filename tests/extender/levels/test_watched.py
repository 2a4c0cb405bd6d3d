"""A Kueue or KAI Topology named on the command line, watched through kubernetes-asyncio
against the fake apiserver: its levels apply once read, a change applies live, a deletion
falls back to the command line's levels; only the named object is read, in either group."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client

from extender.levels.vocabularies import Levels
from extender.levels.watched import TopologyRef, TopologyWatch, levels_of, parse_ref
from kube_rdma.core.objects import Json
from kube_rdma.kube.discovery import Discovery
from testbed.fakeapi import RESOURCES, FakeApiServer, Resource, eventually

KUEUE = "topologies.kueue.x-k8s.io"
KAI = "topologies.kai.scheduler"
SERVED = {
    **RESOURCES,
    KUEUE: Resource("Topology", False, "kueue.x-k8s.io/v1beta1", "topologies"),
    KAI: Resource("Topology", False, "kai.scheduler/v1", "topologies"),
}


def topology(name: str, *labels: str) -> Json:
    """Levels listed top to bottom, as Kueue's sample-queues.yaml and KAI's README list them."""
    return {"metadata": {"name": name}, "spec": {"levels": [{"nodeLabel": n} for n in labels]}}


KUEUE_DEFAULT = topology(
    "default",
    "cloud.provider.com/topology-block",
    "cloud.provider.com/topology-rack",
    "kubernetes.io/hostname",
)


@contextlib.asynccontextmanager
async def watching(
    api: FakeApiServer, ref: TopologyRef, seen: list[Levels | None]
) -> AsyncIterator[None]:
    async with api.api_client() as api_client:
        custom = client.CustomObjectsApi(api_client)
        discovery = Discovery(custom.get_api_resources, recheck=0.05, retry=0.05)
        watch = TopologyWatch(custom, ref, seen.append, discovery=discovery)
        context = watch.context(None)
        await anext(context)
        try:
            yield
        finally:
            with contextlib.suppress(StopAsyncIteration):
                await anext(context)


async def test_a_kueue_topology_applies_changes_and_goes() -> None:
    seen: list[Levels | None] = []
    async with FakeApiServer(SERVED) as api:
        api.create(KUEUE, KUEUE_DEFAULT)
        api.create(KUEUE, topology("other", "zone"))
        async with watching(api, TopologyRef("kueue", "default"), seen):
            await eventually(lambda: seen)
            assert seen == [
                Levels(
                    (
                        "kubernetes.io/hostname",
                        "cloud.provider.com/topology-rack",
                        "cloud.provider.com/topology-block",
                    ),
                    source="Topology kueue:default",
                )
            ]
            api.update(KUEUE, topology("default", "zone", "rack"))
            await eventually(lambda: len(seen) == 2)
            assert seen[1] == Levels(("rack", "zone"), source="Topology kueue:default")
            api.delete(KUEUE, "default")
            await eventually(lambda: len(seen) == 3)
            assert seen[2] is None


async def test_a_kai_topology_installed_later_is_found() -> None:
    seen: list[Levels | None] = []
    api = FakeApiServer(RESOURCES)
    async with api, watching(api, TopologyRef("kai", "cluster-topology"), seen):
        api.install(KAI, SERVED[KAI])
        api.create(KAI, topology("cluster-topology", "block", "rack", "kubernetes.io/hostname"))
        await eventually(lambda: seen and seen[-1] is not None)
        assert seen[-1] == Levels(
            ("kubernetes.io/hostname", "rack", "block"), source="Topology kai:cluster-topology"
        )


def test_parse_ref_and_bad_objects() -> None:
    assert parse_ref("kai:cluster-topology") == TopologyRef("kai", "cluster-topology")
    for bad in ("volcano:x", "kueue:", "default"):
        with pytest.raises(ValueError, match="expected kueue:NAME"):
            parse_ref(bad)
    with pytest.raises(ValueError, match="Topology kueue:x lists no levels with a nodeLabel"):
        levels_of({"spec": {"levels": []}}, TopologyRef("kueue", "x"))
