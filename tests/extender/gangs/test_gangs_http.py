"""Gang placement over HTTP in snapshot mode: whole plans in the narrowest domain, reservations,
steering, the no-fit reason, and the all-or-nothing bind barrier."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.snapshot import SnapshotSource
from extender.gangs.planner import GangSettings
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.fakeapi import eventually

LEAF = keys.LEAF


def cluster() -> list[Json]:
    """Leaf a: 4 nodes; leaf b: 2 nodes; one node of leaf a half busy."""
    objects = [nodes.node(f"a{i}", nodes.hgx(), labels={LEAF: "leaf-a"}) for i in range(4)]
    objects += [nodes.node(f"b{i}", nodes.hgx(), labels={LEAF: "leaf-b"}) for i in range(2)]
    return objects


def member(gang: str, index: int, size: int, gpus: int = 8) -> Json:
    annotations = {"kube-rdma.io/gang": gang, "kube-rdma.io/gang-size": str(size)}
    return nodes.pod(f"{gang}-{index}", gpus=gpus, annotations=annotations)


class Client:
    def __init__(self, session: aiohttp.ClientSession, base: str, app: web.Application) -> None:
        self.session, self.base, self.app = session, base, app

    async def post(self, verb: str, body: Json) -> Any:
        async with self.session.post(f"{self.base}/{verb}", data=orjson.dumps(body)) as response:
            assert response.status == 200
            return orjson.loads(await response.read())

    async def filter(self, pod: Json, names: list[str]) -> Json:
        result: Json = await self.post("filter", {"Pod": pod, "NodeNames": names})
        return result

    async def bind(self, pod: Json, node: str) -> str:
        meta = pod["metadata"]
        args = {
            "PodName": meta["name"],
            "PodNamespace": meta["namespace"],
            "PodUID": "",
            "Node": node,
        }
        result = await self.post("bind", args)
        return str(result["Error"])

    def pod(self, pod: Json) -> Json | None:
        meta = pod["metadata"]
        found: Json | None = self.app[EXTENDER].source.cluster.pod(meta["namespace"], meta["name"])
        return found


Serve = Callable[..., Any]


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[list[Json], GangSettings], Any]]:
    runners: list[web.AppRunner] = []
    sessions: list[aiohttp.ClientSession] = []

    async def start(objects: list[Json], gangs: GangSettings) -> Client:
        app = create_app(Settings(gangs=gangs, sweep_interval=0.02), SnapshotSource(objects))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        session = aiohttp.ClientSession()
        sessions.append(session)
        return Client(session, f"http://127.0.0.1:{runner.addresses[0][1]}", app)

    yield start
    for session in sessions:
        await session.close()
    for runner in runners:
        await runner.cleanup()


NAMES = ["a0", "a1", "a2", "a3", "b0", "b1"]


async def test_a_gang_is_planned_whole_in_the_tightest_leaf_and_steered(serve: Any) -> None:
    members = [member("llama", i, 2) for i in range(2)]
    client = await serve([*cluster(), *members], GangSettings())
    first = await client.filter(members[0], NAMES)
    # leaf-b holds exactly 2 members: the tightest fit
    assert first["NodeNames"] == ["b0"]
    assert first["FailedAndUnresolvableNodes"] == {
        n: "gang team-a/llama has this member planned on b0 (plan: 2 pods on 2 nodes in leaf-b)"
        for n in NAMES
        if n != "b0"
    }
    second = await client.filter(members[1], NAMES)
    assert second["NodeNames"] == ["b1"]
    again = await client.filter(members[0], NAMES)
    assert again["NodeNames"] == ["b0"], "a member keeps its planned node"
    # Another pod sees the planned capacity as used.
    other = nodes.pod("solo")
    seen = await client.filter(other, NAMES)
    assert seen["NodeNames"] == ["a0", "a1", "a2", "a3"]
    assert seen["FailedNodes"] == {
        "b0": "nvidia.com/gpu: 0 of 8 free, pod needs 8",
        "b1": "nvidia.com/gpu: 0 of 8 free, pod needs 8",
    }


async def test_a_gang_that_fits_nowhere_is_unresolvable_everywhere(serve: Any) -> None:
    big = member("big", 0, 10)
    client = await serve([*cluster(), *(member("big", i, 10) for i in range(10))], GangSettings())
    result = await client.filter(big, NAMES)
    reason = (
        "gang team-a/big needs 10 x (8 GPU, 8 rails): best domain leaf-a fits 4, cluster fits 6"
    )
    assert result == {
        "NodeNames": [],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": dict.fromkeys(NAMES, reason),
        "Error": "",
        "Nodes": None,
    }


async def test_members_bind_together_once_all_arrived(serve: Any) -> None:
    members = [member("trio", i, 3) for i in range(3)]
    client = await serve([*cluster(), *members], GangSettings(barrier_timeout=2.0))
    planned = [(await client.filter(m, NAMES))["NodeNames"][0] for m in members]
    assert sorted(planned) == ["a0", "a1", "a2"]
    first_two = [
        asyncio.create_task(client.bind(m, n))
        for m, n in zip(members[:2], planned[:2], strict=True)
    ]
    await asyncio.sleep(0.2)
    assert not any(t.done() for t in first_two), "held until the last member arrives"
    assert all("nodeName" not in (client.pod(m) or {})["spec"] for m in members)
    assert await client.bind(members[2], planned[2]) == ""
    assert [await t for t in first_two] == ["", ""]
    assert [(client.pod(m) or {})["spec"]["nodeName"] for m in members] == planned
    assert client.app[EXTENDER].planner.plans == {}, "a gang bound whole needs no plan"


async def test_a_member_whose_bind_timed_out_is_bound_when_the_last_arrives(serve: Any) -> None:
    members = [member("trio", i, 3) for i in range(3)]
    client = await serve([*cluster(), *members], GangSettings(barrier_timeout=0.1))
    planned = [(await client.filter(m, NAMES))["NodeNames"][0] for m in members]
    errors = [await client.bind(m, n) for m, n in zip(members[:2], planned[:2], strict=True)]
    assert errors == [
        f"gang team-a/trio: {count} of 3 members reached bind so far; this one keeps its "
        "place and is bound when the last arrives"
        for count in (1, 2)
    ]
    assert all("nodeName" not in (client.pod(m) or {})["spec"] for m in members)
    assert await client.bind(members[2], planned[2]) == ""
    await eventually(lambda: all("nodeName" in (client.pod(m) or {})["spec"] for m in members))
    assert [(client.pod(m) or {})["spec"]["nodeName"] for m in members] == planned
    assert await client.bind(members[0], planned[0]) == "", "kube-scheduler's retry: bound"
    assert client.app[EXTENDER].planner.plans == {}


async def test_a_gang_that_stops_arriving_binds_nobody_and_drops_the_plan(serve: Any) -> None:
    members = [member("trio", i, 3) for i in range(3)]
    gangs = GangSettings(barrier_timeout=0.5, barrier_progress_timeout=0.1)
    client = await serve([*cluster(), *members], gangs)
    planned = [(await client.filter(m, NAMES))["NodeNames"][0] for m in members]
    errors = await asyncio.gather(
        *(client.bind(m, n) for m, n in zip(members[:2], planned[:2], strict=True))
    )
    reason = (
        "gang team-a/trio: 2 of 3 members reached bind, none new for 0.1s; none is bound, the "
        "gang is planned again"
    )
    assert errors == [reason, reason]
    assert all("nodeName" not in (client.pod(m) or {})["spec"] for m in members)
    assert client.app[EXTENDER].planner.plans == {}
    assert client.app[EXTENDER].planner.reserved == {}


async def test_a_plan_without_progress_expires(serve: Any) -> None:
    members = [member("pair", i, 2) for i in range(2)]
    client = await serve([*cluster(), *members], GangSettings(plan_timeout=0.05))
    await client.filter(members[0], NAMES)
    assert client.app[EXTENDER].planner.plans
    await asyncio.sleep(0.2)
    assert client.app[EXTENDER].planner.plans == {}
    assert client.app[EXTENDER].planner.reserved == {}


async def test_a_planned_node_kube_scheduler_ruled_out_is_avoided_at_once(serve: Any) -> None:
    """Six nodes: kube-scheduler sends every node that passed its filters, so a planned node
    missing from its candidates was ruled out, and the gang is planned again without it."""
    members = [member("pair", i, 2) for i in range(2)]
    client = await serve([*cluster(), *members], GangSettings(absent_limit=2))
    assert (await client.filter(members[0], NAMES))["NodeNames"] == ["b0"]
    without_b0 = ["a0", "a1", "a2", "a3", "b1"]
    result = await client.filter(members[0], without_b0)
    assert result["NodeNames"] == []
    assert set(result["FailedAndUnresolvableNodes"].values()) == {
        "gang team-a/pair: kube-scheduler ruled out planned node b0: its 5 candidates are every "
        "node that passed its filters, so a check the extender cannot see refused it (another "
        "plugin, pod affinity, volumes, ports); the gang is planned again without b0"
    }
    plan = client.app[EXTENDER].planner.plans[("team-a", "pair")]
    assert (plan.slots, plan.ruled_out) == (["a0", "a1"], frozenset({"b0"}))
    assert (await client.filter(members[0], without_b0))["NodeNames"] == ["a0"]


async def test_explain_shows_the_gang_and_its_plan(serve: Any) -> None:
    members = [member("pair", i, 2) for i in range(2)]
    client = await serve([*cluster(), *members], GangSettings())
    await client.filter(members[0], NAMES)
    async with client.session.get(f"{client.base}/explain?namespace=team-a&name=pair-0") as r:
        body = orjson.loads(await r.read())
    assert body["gang"] == {
        "name": "team-a/pair",
        "size": 2,
        "source": "kube-rdma.io/gang",
        "plan": {"domain": "leaf-b", "nodes": ["b0", "b1"]},
        "levels": {
            "source": "kube-rdma",
            "inUse": [keys.LEAF],
            "asks": "no level asked (none)",
            "domains": {keys.LEAF: ["leaf-b"]},
        },
    }
    url = f"{client.base}/explain?namespace=team-a&name=pair-0&format=table"
    async with client.session.get(url) as r:
        lines = (await r.text()).splitlines()
    assert lines[1:4] == [
        "gang team-a/pair of 2 (kube-rdma.io/gang): planned in leaf-b on 2 nodes",
        f"levels (kube-rdma): {keys.LEAF}; asks: no level asked (none)",
        f"  {keys.LEAF}: leaf-b",
    ]


async def test_explain_gives_the_numbers_of_a_gang_that_does_not_fit(serve: Any) -> None:
    members = [member("seven", i, 7) for i in range(7)]
    client = await serve([*cluster(), *members], GangSettings())
    reason = (
        "gang team-a/seven needs 7 x (8 GPU, 8 rails): best domain leaf-a fits 4, cluster fits 6"
    )
    filtered = await client.filter(members[0], NAMES)
    assert set(filtered["FailedAndUnresolvableNodes"].values()) == {reason}
    async with client.session.get(f"{client.base}/explain?namespace=team-a&name=seven-0") as r:
        body = orjson.loads(await r.read())
    waiting = body["gang"].pop("waiting")
    assert (waiting["priority"], waiting["reason"]) == (0, reason)
    assert body["gang"] == {
        "name": "team-a/seven",
        "size": 7,
        "source": "kube-rdma.io/gang",
        "plan": None,
        "capacity": reason,
        "levels": {"source": "kube-rdma", "inUse": [keys.LEAF], "asks": "no level asked (none)"},
    }
    url = f"{client.base}/explain?namespace=team-a&name=seven-0&format=table"
    async with client.session.get(url) as r:
        lines = (await r.text()).splitlines()
    assert lines[1] == f"gang team-a/seven of 7 (kube-rdma.io/gang): no plan now: {reason}"


async def test_a_member_deleted_at_the_barrier_binds_nobody(serve: Any) -> None:
    members = [member("trio", i, 3) for i in range(3)]
    gangs = GangSettings(barrier_timeout=30, barrier_progress_timeout=2.0)
    client = await serve([*cluster(), *members], gangs)
    planned = [(await client.filter(m, NAMES))["NodeNames"][0] for m in members]
    waiting = [
        asyncio.create_task(client.bind(m, n))
        for m, n in zip(members[:2], planned[:2], strict=True)
    ]
    plan = client.app[EXTENDER].planner.plans[("team-a", "trio")]
    await eventually(lambda: len(plan.waiting) == 2, within=30)
    client.app[EXTENDER].source.cluster.delete_pod(("team-a", "trio-1"))
    last = await client.bind(members[2], planned[2])
    results = [last, *[await t for t in waiting]]
    given_up = (
        "gang team-a/trio: 2 of 3 members reached bind, none new for 2s; none is bound, the gang "
        "is planned again"
    )
    assert results == [given_up, given_up, "pod team-a/trio-1 was deleted"]
    assert all("nodeName" not in (client.pod(m) or {"spec": {}})["spec"] for m in members)


async def test_pods_beyond_the_gang_size_bind_without_waiting(serve: Any) -> None:
    members = [member("pair", i, 2) for i in range(3)]
    client = await serve([*cluster(), *members], GangSettings(barrier_timeout=2.0))
    planned = [(await client.filter(m, NAMES))["NodeNames"][0] for m in members[:2]]
    extra = await client.filter(members[2], NAMES)
    assert extra["NodeNames"], "a pod past the gang's size is scheduled like any other"
    binds = await asyncio.gather(
        *(client.bind(m, n) for m, n in zip(members[:2], planned, strict=True))
    )
    assert binds == ["", ""]
    assert await client.bind(members[2], "a0") == ""
    assert client.app[EXTENDER].planner.plans == {}


async def test_a_member_without_gpus_counts_at_the_barrier(serve: Any) -> None:
    workers = [member("mpi", i, 3) for i in range(2)]
    launcher = member("mpi", 9, 3, gpus=0)
    launcher["spec"]["containers"][0]["resources"] = {}
    del launcher["metadata"]["annotations"]["kube-rdma.io/applied"]  # the webhook skips it
    client = await serve([*cluster(), *workers, launcher], GangSettings(barrier_timeout=2.0))
    planned = [(await client.filter(m, NAMES))["NodeNames"][0] for m in workers]
    assert (await client.filter(launcher, NAMES))["NodeNames"] == NAMES
    binds = await asyncio.gather(
        *(client.bind(m, n) for m, n in zip(workers, planned, strict=True)),
        client.bind(launcher, "b1"),
    )
    assert binds == ["", "", ""]


async def test_deleting_every_member_releases_the_reservation(serve: Any) -> None:
    members = [member("trio", i, 3) for i in range(3)]
    client = await serve([*cluster(), *members], GangSettings())
    for m in members:
        await client.filter(m, NAMES)
    planner = client.app[EXTENDER].planner
    assert planner.reserved
    for m in members:
        client.app[EXTENDER].source.cluster.delete_pod(("team-a", m["metadata"]["name"]))
    await eventually(lambda: planner.plans == {})
    assert planner.reserved == {}


async def test_the_members_at_the_barrier_are_a_gauge(serve: Any) -> None:
    members = [member("trio", i, 3) for i in range(3)]
    client = await serve([*cluster(), *members], GangSettings(barrier_timeout=30))
    planned = [(await client.filter(m, NAMES))["NodeNames"][0] for m in members]
    registry = client.app[EXTENDER].metrics.registry

    def at_barrier() -> float | None:
        value: float | None = registry.get_sample_value("kube_rdma_gang_members_at_barrier")
        return value

    assert at_barrier() == 0
    waiting = [
        asyncio.create_task(client.bind(m, n))
        for m, n in zip(members[:2], planned[:2], strict=True)
    ]
    await eventually(lambda: at_barrier() == 2, within=30)
    assert await client.bind(members[2], planned[2]) == ""
    assert [await t for t in waiting] == ["", ""]
    assert at_barrier() == 0  # the barrier opened: nobody waits
