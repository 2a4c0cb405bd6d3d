"""A gang's plan honours what its pods ask even while the extender's cache lacks them: the asks
come from the pod kube-scheduler sent (the filter request's copy), the plan records the asks it
honoured, and a plan made without a member's asks is redone when that member arrives asking
otherwise.

Before, the asks were read from the cache alone, and from nothing while the watch had delivered
none of the gang's pods (a job's pods created at once, kube-scheduler's informer a moment ahead):
a gang requiring one NVLink clique was planned across two, and a gang selecting pool `a` was
planned in pool `b`. A pod the cache lacks is never planned for (no plan kept: no side effect
for a pod the apiserver has not shown), but its verdict says where its gang would go, as asked.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.snapshot import SnapshotSource
from extender.cluster.trim import trim_pod
from extender.gangs.planner import GangSettings
from extender.gangs.pools import asks
from extender.gangs.settings import level_settings
from extender.levels import vocabularies as v
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed import net
from testbed.builders import nodes

CLIQUES, PER_CLIQUE, GPUS = 4, 4, 4
RDMA = {"rdma/hca": GPUS}


def nvl_nodes() -> list[Json]:
    """16 NVL-style nodes `gb-<clique>-<slot>` of 4 GPUs: 4 NVLink cliques of 4, one leaf."""
    made = []
    for clique in range(CLIQUES):
        for slot in range(PER_CLIQUE):
            name = f"gb-{clique}-{slot}"
            labels = {v.CLIQUE: f"cluster.{clique}", keys.LEAF: "leaf-0"}
            made.append(nodes.node(name, nodes.hgx(gpus=GPUS), GPUS, RDMA, labels))
    return made


def busy(node: str) -> Json:
    return nodes.pod(f"busy-{node}", gpus=GPUS, rdma=RDMA, node_name=node, phase="Running")


def member(gang: str, index: int, size: int, **extra: Any) -> Json:
    annotations = {keys.GANG: gang, keys.GANG_SIZE: str(size), **extra.pop("annotations", {})}
    pod = nodes.pod(f"{gang}-{index}", gpus=GPUS, rdma=RDMA, annotations=annotations)
    pod["spec"].update(extra)
    return pod


@dataclass
class Served:
    session: aiohttp.ClientSession
    base: str
    app: web.Application

    async def filter(self, pod: Json, names: list[str]) -> Json:
        body = orjson.dumps({"Pod": pod, "NodeNames": names})
        async with self.session.post(f"{self.base}/filter", data=body) as response:
            assert response.status == 200
            answer: Json = orjson.loads(await response.read())
            return answer

    def deliver(self, *pods: Json) -> None:
        """The watch delivers the pods to the cache."""
        for pod in pods:
            self.app[EXTENDER].source.cluster.upsert_pod(trim_pod(pod))

    @property
    def plans(self) -> dict[Any, Any]:
        return dict(self.app[EXTENDER].planner.plans)


async def serving(objects: list[Json]) -> AsyncIterator[Served]:
    settings = Settings(gangs=level_settings(GangSettings(), "kube-rdma", None))
    app = create_app(settings, SnapshotSource(objects))
    async with net.serving(app) as base, aiohttp.ClientSession() as session:
        yield Served(session, base, app)


@pytest.fixture
async def nvl() -> AsyncIterator[Served]:
    """Cliques 0-2 have one node busy each; clique 3 is free. The cache holds no gang pod."""
    objects = nvl_nodes()
    objects += [busy(f"gb-{c}-0") for c in range(3)]
    async for served in serving(objects):
        yield served


def planned_nodes(error: str) -> list[str]:
    found = re.search(r"would get a plan: \d+ pods on \d+ nodes in [^:]+: ([\w, -]+);", error)
    assert found, error
    return found.group(1).split(", ")


NAMES = [f"gb-{c}-{s}" for c in range(CLIQUES) for s in range(PER_CLIQUE)]
NVLINK = {keys.TOPOLOGY_REQUIRED: "nvlink"}


async def test_a_gang_requiring_one_clique_is_planned_in_one_with_the_cache_empty(
    nvl: Served,
) -> None:
    pods = [member("nv", i, 4, annotations=NVLINK) for i in range(4)]
    answer = await nvl.filter(pods[0], NAMES)
    assert answer["NodeNames"] == []
    assert "is not in the extender's cache yet" in answer["Error"]
    assert sorted(planned_nodes(answer["Error"])) == [f"gb-3-{s}" for s in range(4)]
    assert nvl.plans == {}  # a verdict: nothing kept for a pod the apiserver has not shown
    nvl.deliver(*pods)
    steered = [(await nvl.filter(pod, NAMES))["NodeNames"] for pod in pods]
    assert sorted(n for names in steered for n in names) == [f"gb-3-{s}" for s in range(4)]
    [plan] = nvl.plans.values()
    assert set(plan.honoured.values()) == {asks(pods[0])}


async def test_without_the_requirement_the_same_cluster_spans_cliques(nvl: Served) -> None:
    """The control: what the gang gets when nothing requires the clique."""
    pods = [member("free", i, 4) for i in range(4)]
    nodes_planned = planned_nodes((await nvl.filter(pods[0], NAMES))["Error"])
    assert len({n.split("-")[1] for n in nodes_planned}) > 1


@pytest.fixture
async def pools() -> AsyncIterator[Served]:
    """Pool `b` (node-0 to node-3, first by every order) and pool `a` (node-4 to node-7), 4
    nodes each; nothing busy."""
    objects = [
        nodes.node(f"node-{i}", nodes.hgx(gpus=GPUS), GPUS, RDMA, {"pool": "ab"[i < 4]})
        for i in range(8)
    ]
    async for served in serving(objects):
        yield served


POOLS = [f"node-{i}" for i in range(8)]
POOL_A = [f"node-{i}" for i in range(4, 8)]


async def test_a_gang_selecting_pool_a_is_planned_in_pool_a_on_the_first_call(
    pools: Served,
) -> None:
    pods = [member("sel", i, 4, nodeSelector={"pool": "a"}) for i in range(4)]
    first = await pools.filter(pods[0], POOLS)
    assert sorted(planned_nodes(first["Error"])) == POOL_A
    assert "does not fit" not in first["Error"]
    pools.deliver(*pods)
    steered = [(await pools.filter(pod, POOLS))["NodeNames"] for pod in pods]
    assert sorted(n for names in steered for n in names) == POOL_A


async def test_a_plan_made_without_a_members_asks_is_redone_when_they_arrive(
    nvl: Served,
) -> None:
    """The gang is planned once its members exist (a gang acts only then), none asking
    anything of the network; then member 1 comes to require one NVLink clique (its annotation
    set after the plan was made): the plan is redone for it."""
    first = member("mix", 0, 4)
    plain = [member("mix", i, 4) for i in range(1, 4)]
    nvl.deliver(first, *plain)
    assert (await nvl.filter(first, NAMES))["NodeNames"] != []
    [before] = nvl.plans.values()
    assert len({n.split("-")[1] for n in before.slots}) > 1, "planned across cliques"
    assert before.honoured[("team-a", "mix-1")] == asks(plain[0])
    later = member("mix", 1, 4, annotations=NVLINK)
    nvl.deliver(later)
    answer = await nvl.filter(later, NAMES)
    [after] = nvl.plans.values()
    assert after is not before
    assert {n.split("-")[1] for n in after.slots} == {"3"}
    assert answer["NodeNames"]
    assert answer["NodeNames"][0].startswith("gb-3-")
    assert after.honoured[("team-a", "mix-1")] == asks(later)
