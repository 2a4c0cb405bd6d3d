"""One cluster in two forms, device plugins and DRA only: the extender must answer alike.

Both forms are clustergen's cluster; the DRA form (testbed/clustergen/dra.py) publishes every
node's GPUs and RDMA NICs as ResourceSlices and moves every pod's GPU and RDMA requests into
resource claims (running pods' claims allocated on their nodes). Every filter answer, every
score and every gang member's planned node must be the same, body for body.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import orjson

from extender.app import Settings, create_app
from extender.cluster.snapshot import SnapshotSource
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed import net
from testbed.builders import nodes
from testbed.clustergen import ClusterSpec, generate
from testbed.clustergen.dra import dra_form

SPEC = ClusterSpec(nodes=96, seed=7, nodes_per_leaf=16, leaves_per_spine=2, busy_fraction=0.6)
SHAPES = [
    nodes.pod(f"shape-{gpus}", gpus=gpus, rdma={"rdma/hca": gpus}, namespace="team-a")
    for gpus in (1, 2, 4, 8)
]
GANG = [
    nodes.pod(f"gang-{i}", annotations={keys.GANG: "gang", keys.GANG_SIZE: "6"}) for i in range(6)
]


@contextlib.asynccontextmanager
async def extender(objects: list[Json]) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    app = create_app(Settings(), SnapshotSource(objects))
    async with net.serving(app) as base, aiohttp.ClientSession() as session:
        yield session, base


async def answers(objects: list[Json], asked: list[str]) -> dict[str, object]:
    """Every asked pod's filter and prioritize answers over every node, in order."""
    pods = {str(o["metadata"]["name"]): o for o in objects if o.get("kind") == "Pod"}
    names = sorted(str(o["metadata"]["name"]) for o in objects if o.get("kind") == "Node")
    found: dict[str, object] = {}
    async with extender(objects) as (session, base):
        for name in asked:
            body = orjson.dumps({"Pod": pods[name], "NodeNames": names, "Nodes": None})
            for verb in ("filter", "prioritize"):
                async with session.post(f"{base}/{verb}", data=body) as response:
                    assert response.status == 200
                    found[f"{verb} {name}"] = orjson.loads(await response.read())
    return found


async def test_filters_scores_and_gang_plans_are_the_same_in_both_forms() -> None:
    plugins = [*generate(SPEC), *SHAPES, *GANG]
    pending = [
        str(o["metadata"]["name"])
        for o in plugins
        if o.get("kind") == "Pod" and not o["spec"].get("nodeName")
    ]
    assert len(pending) >= 10
    dra = dra_form(plugins)
    assert not any(
        "nvidia.com/gpu" in (c.get("resources") or {}).get("limits", {})
        for o in dra
        if o.get("kind") == "Pod"
        for c in o["spec"]["containers"]
    )
    expected = await answers(plugins, pending)
    found = await answers(dra, pending)
    assert found == expected
    # The answers say something: some nodes pass, some fail for capacity, the gang is steered.
    shape = expected["filter shape-8"]
    assert isinstance(shape, dict)
    assert shape["NodeNames"]
    assert shape["FailedNodes"]
    member = expected["filter gang-0"]
    assert isinstance(member, dict)
    assert len(member["NodeNames"]) == 1


async def test_a_gang_spans_dra_and_device_plugin_nodes() -> None:
    """Four empty nodes, two publishing their devices through DRA: a gang of four 8-GPU pods
    asking for `nvidia.com/gpu` (which the DRA nodes serve through the GPU DeviceClass's
    extendedResourceName) takes all four, one member each. They ask for no `rdma/hca`, which
    no DeviceClass serves: such a pod could have no DRA node."""
    spec = ClusterSpec(
        nodes=4,
        seed=3,
        busy_fraction=0.0,
        rail_down_fraction=0.0,
        flaky_fraction=0.0,
        no_agent_fraction=0.0,
    )
    cluster = [o for o in generate(spec) if o.get("kind") == "Node"]
    names = sorted(str(o["metadata"]["name"]) for o in cluster)
    gang = [
        nodes.pod(f"m-{i}", rdma={}, annotations={keys.GANG: "m", keys.GANG_SIZE: "4"})
        for i in range(4)
    ]
    mixed = dra_form([*cluster, *gang], nodes=names[:2])
    kinds = {o["spec"]["nodeName"] for o in mixed if o.get("kind") == "ResourceSlice"}
    assert kinds == set(names[:2])
    source = SnapshotSource(mixed)
    async with net.serving(create_app(Settings(), source)) as base, aiohttp.ClientSession() as s:
        planned = []
        for member in gang:
            body = orjson.dumps({"Pod": member, "NodeNames": names, "Nodes": None})
            async with s.post(f"{base}/filter", data=body) as response:
                planned += (await response.json())["NodeNames"]
        assert sorted(planned) == names

        async def bind(member: Json, node: str) -> object:
            meta = member["metadata"]
            args = {
                "PodName": meta["name"],
                "PodNamespace": meta["namespace"],
                "PodUID": "",
                "Node": node,
            }
            async with s.post(f"{base}/bind", data=orjson.dumps(args)) as response:
                return await response.json()

        results = await asyncio.gather(*(bind(m, n) for m, n in zip(gang, planned, strict=True)))
    assert results == [{"Error": ""}] * 4
    for name in names:
        node = source.cluster.node(name)
        assert node is not None
        assert (node.allocatable["nvidia.com/gpu"], node.free("nvidia.com/gpu")) == (8, 0)
