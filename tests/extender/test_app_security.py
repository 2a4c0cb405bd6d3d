"""The verbs in-process (snapshot mode): side effects only for pods the cache holds with the
request's uid, judged as the cache has them; /bind only for a cached, unbound pod of the
extender's scheduler."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.snapshot import SnapshotSource
from extender.scheduling import Scheduler
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed import net
from testbed.builders import nodes

NODES = [nodes.node(f"gpu-{i}", nodes.hgx()) for i in range(2)]
GANG = {keys.GANG: "g", keys.GANG_SIZE: "2"}
PAIR = {keys.GANG: "pair", keys.GANG_SIZE: "2"}


def pod(name: str, scheduler: str | None = "rdma-scheduler", **extra: object) -> Json:
    made = nodes.pod(name, **extra)  # type: ignore[arg-type]
    if scheduler is not None:
        made["spec"]["schedulerName"] = scheduler
    return made


BUSY = pod("busy", node_name="gpu-1", phase="Running")
CACHED = [pod("solo"), pod("other", scheduler=None), BUSY, pod("g-0", annotations=GANG)]
CACHED += [pod(f"pair-{i}", annotations=PAIR) for i in range(2)]  # a gang whose members exist


class Client:
    def __init__(self, session: aiohttp.ClientSession, base: str, scheduler: Scheduler) -> None:
        self.session, self.base, self.scheduler = session, base, scheduler

    async def post(self, verb: str, body: Json) -> Json:
        async with self.session.post(f"{self.base}/{verb}", data=orjson.dumps(body)) as response:
            assert response.status == 200
            answer: Json = orjson.loads(await response.read())
            return answer

    async def bind(self, name: str, uid: str, node: str = "gpu-0") -> str:
        args = {"PodName": name, "PodNamespace": "team-a", "PodUID": uid, "Node": node}
        return str((await self.post("bind", args))["Error"])


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    app = create_app(Settings(own_pods_only=True), SnapshotSource([*NODES, *CACHED]))
    async with net.serving(app) as base, aiohttp.ClientSession() as session:
        yield Client(session, base, app[EXTENDER].scheduler)


def with_uid(made: Json, uid: str) -> Json:
    return {**made, "metadata": {**made["metadata"], "uid": uid}}


async def test_an_uncached_gang_member_plans_holds_and_notes_nothing(client: Client) -> None:
    stranger = pod("g-1", annotations=GANG)
    stranger["spec"]["priority"] = 2_000_000_000
    for sent in (stranger, with_uid(CACHED[3], "uid-of-another-g-0")):
        answer = await client.post("filter", {"Pod": sent, "NodeNames": ["gpu-0", "gpu-1"]})
        assert answer["NodeNames"] == []
        assert "is not in the extender's cache yet" in answer["Error"]
    assert client.scheduler.planner.plans == {}
    assert client.scheduler.contention.waiting == {}
    victims = {"gpu-1": {"Pods": [{"UID": "uid-busy"}], "NumPDBViolations": 0}}
    for sent in (stranger, with_uid(pod("solo"), "uid-forged")):
        answer = await client.post("preempt", {"Pod": sent, "NodeNameToMetaVictims": victims})
        assert answer == {"NodeNameToMetaVictims": {}}
    assert client.scheduler.contention.waiting == {}


async def test_a_cached_pod_is_judged_as_the_cache_has_it(client: Client) -> None:
    """The body claims a priority the pod does not have: the gang waits at the cache's."""
    claimed = pod("pair-0", annotations=PAIR)
    claimed["spec"]["priority"] = 2_000_000_000
    await client.post("filter", {"Pod": claimed, "NodeNames": ["gpu-0", "gpu-1"]})
    assert client.scheduler.planner.plans == {}  # gpu-1 is busy: the gang of 2 does not fit
    assert [w.priority for w in client.scheduler.contention.waiting.values()] == [0]


async def test_an_uncached_pod_alone_is_judged_from_the_request(client: Client) -> None:
    answer = await client.post("filter", {"Pod": pod("new"), "NodeNames": ["gpu-0", "gpu-1"]})
    assert (answer["NodeNames"], answer["Error"]) == (["gpu-0"], "")
    scores: Any = await client.post("prioritize", {"Pod": pod("new"), "NodeNames": ["gpu-0"]})
    assert [s["Host"] for s in scores] == ["gpu-0"]


async def test_bind_refuses_other_schedulers_bound_and_recreated_pods(client: Client) -> None:
    assert await client.bind("other", "uid-other") == (
        "pod team-a/other is for scheduler default-scheduler, not rdma-scheduler: the extender "
        "binds only the pods of the scheduler it serves"
    )
    assert await client.bind("busy", "uid-busy") == "pod team-a/busy is already bound to gpu-1"
    assert await client.bind("solo", "uid-earlier") == (
        "pod team-a/solo has uid uid-solo, not uid-earlier"
    )
    assert await client.bind("ghost", "uid-ghost") == "pod team-a/ghost does not exist"
    assert await client.bind("solo", "uid-solo") == ""
