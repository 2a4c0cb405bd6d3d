"""A pod that reaches the extender's verbs before its watch delivered it: kube-scheduler's
informer can deliver a pod created milliseconds before its cycle sooner than the extender's own
watch. Its filter is answered from the request's copy (a pod alone) or retried (a gang member);
its bind waits briefly for the watch and binds the pod the cache holds, never the request's copy
or a pod read by GET (read only to say why a bind fails).

The HTTP tests run the real app and live source against the fake apiserver, with the watches
ended and the reflectors held before they watch again: the pod exists at the apiserver and in
kube-scheduler's view, not in the extender's cache."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.live import LiveSource
from extender.cluster.trim import trim_pod
from extender.filtered_pods import FilteredPods
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed import net
from testbed.builders import nodes
from testbed.fakeapi import FakeApiServer, eventually

POD = "/api/v1/namespaces/team-a/pods/worker-0"
NAMES = ["gpu-1", "gpu-2"]


def pod(name: str, uid: str, namespace: str = "team-a") -> Json:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"containers": [{"name": "main"}]},
    }


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_filtered_pod_is_found_by_uid_namespace_and_name() -> None:
    filtered = FilteredPods()
    filtered.remember(pod("w0", "u0"))
    assert filtered.get("team-a", "w0", "u0") == pod("w0", "u0")
    assert filtered.get("team-a", "w0", "u1") is None
    assert filtered.get("team-b", "w0", "u0") is None
    assert filtered.get("team-a", "w1", "u0") is None
    assert filtered.get("team-a", "w0", "") is None


def test_a_pod_without_uid_is_not_kept() -> None:
    filtered = FilteredPods()
    filtered.remember({"metadata": {"name": "w0", "namespace": "team-a"}})
    assert len(filtered) == 0


def test_filtered_pods_expire() -> None:
    clock = Clock()
    filtered = FilteredPods(ttl=10.0, clock=clock)
    filtered.remember(pod("w0", "u0"))
    clock.now = 5.0
    filtered.remember(pod("w1", "u1"))
    clock.now = 10.0
    assert filtered.get("team-a", "w0", "u0") is None
    assert filtered.get("team-a", "w1", "u1") == pod("w1", "u1")
    clock.now = 15.0
    assert len(filtered) == 1  # nothing is dropped before it is looked at
    assert filtered.get("team-a", "w1", "u1") is None
    assert len(filtered) == 0


def test_filtered_pods_keep_the_newest_within_capacity() -> None:
    filtered = FilteredPods(capacity=2)
    for index in range(3):
        filtered.remember(pod(f"w{index}", f"u{index}"))
    filtered.remember(pod("w1", "u1"))  # filtered again: now the newest
    filtered.remember(pod("w3", "u3"))
    assert len(filtered) == 2
    found = [filtered.get("team-a", f"w{i}", f"u{i}") is not None for i in range(4)]
    assert found == [False, True, False, True]


def test_a_filtered_pod_is_kept_trimmed() -> None:
    whole = nodes.pod("worker-0", node_settings=True)
    whole["metadata"]["uid"] = "u0"
    whole["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    filtered = FilteredPods()
    filtered.remember(whole)
    assert filtered.get("team-a", "worker-0", "u0") == trim_pod(whole)


class Extender:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        base: str,
        deliver: Callable[[], None],
        app: web.Application,
    ) -> None:
        self.session, self.base, self.app = session, base, app
        self.deliver = deliver
        """Let the watches go on: what the apiserver holds reaches the cache."""

    async def post(self, verb: str, body: Json) -> Json:
        async with self.session.post(f"{self.base}/{verb}", data=orjson.dumps(body)) as response:
            assert response.status == 200
            answer: Json = orjson.loads(await response.read())
            return answer

    async def explain(self, name: str) -> tuple[int, Json]:
        query = f"/explain?namespace=team-a&name={name}"
        async with self.session.get(self.base + query) as response:
            return response.status, orjson.loads(await response.read())


@contextlib.asynccontextmanager
async def watch_lagging(api: FakeApiServer, core_v1: Any) -> AsyncIterator[Extender]:
    """The extender app over a live source that has listed the cluster and whose watches then
    stopped: what the apiserver gets after this, the extender's cache does not see."""
    api.create("nodes", nodes.node("gpu-1", nodes.hgx()))
    api.create("nodes", nodes.node("gpu-2", nodes.hgx(down=(3,))))
    resume = asyncio.Event()
    backoffs: list[float] = []

    async def held(delay: float) -> None:
        backoffs.append(delay)
        await resume.wait()

    source = LiveSource(core_v1, sleep=held)
    app = create_app(Settings(), source)
    async with net.serving(app) as base, aiohttp.ClientSession() as session:
        await eventually(source.ready)
        await eventually(lambda: api.watching == 2)
        api.end_watches()
        await eventually(lambda: len(backoffs) == 2)  # both reflectors wait to watch again
        yield Extender(session, base, resume.set, app)
        resume.set()


def binding(pod: Json, node: str = "gpu-1") -> Json:
    meta = pod["metadata"]
    return {"PodName": meta["name"], "PodNamespace": meta["namespace"]} | {
        "PodUID": meta["uid"],
        "Node": node,
    }


def reads_of_the_pod(api: FakeApiServer) -> int:
    return sum(1 for r in api.requests if r.method == "GET" and r.path == POD)


def bound(api: FakeApiServer) -> tuple[str, set[str]]:
    stored = api.get("pods", "worker-0", "team-a")
    annotations = stored["metadata"].get("annotations") or {}
    return stored["spec"].get("nodeName", ""), {keys.GID_INDEX, keys.HCA} & annotations.keys()


async def test_a_bind_waits_for_the_watch_and_binds_the_cached_pod(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    async with watch_lagging(fake_api, core_v1) as extender:
        created = fake_api.create("pods", nodes.pod("worker-0", node_settings=True))
        args = {"Pod": created, "NodeNames": NAMES, "Nodes": None}
        assert (await extender.post("filter", args))["NodeNames"] == ["gpu-1"]
        fake_api.fail("GET", POD, 500)  # the cache's pod is bound: no read is needed
        bind = asyncio.create_task(extender.post("bind", binding(created)))
        extender.deliver()
        assert await bind == {"Error": ""}
    assert reads_of_the_pod(fake_api) == 0
    assert bound(fake_api) == ("gpu-1", {keys.GID_INDEX, keys.HCA})


async def test_a_pod_the_watch_never_delivers_is_not_bound(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    """Before, the bind used the filter's copy or a GET; now only the cache's pod is bound.
    The GET only says why (the pod exists: the watch lags)."""
    async with watch_lagging(fake_api, core_v1) as extender:
        created = fake_api.create("pods", nodes.pod("worker-0", node_settings=True))
        args = {"Pod": created, "NodeNames": NAMES, "Nodes": None}
        assert (await extender.post("filter", args))["NodeNames"] == ["gpu-1"]
        assert await extender.post("bind", binding(created)) == {
            "Error": "pod team-a/worker-0 is not in the extender's cache yet (its watch lags by "
            "more than 0.5s; it binds only pods its watch delivered); the pod is retried"
        }
    assert reads_of_the_pod(fake_api) == 1
    assert bound(fake_api) == ("", set())


async def test_a_filter_of_another_pod_of_that_name_is_not_used(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    async with watch_lagging(fake_api, core_v1) as extender:
        created = fake_api.create("pods", nodes.pod("worker-0", node_settings=True))
        earlier = {**created, "metadata": {**created["metadata"], "uid": "uid-of-an-earlier-pod"}}
        await extender.post("filter", {"Pod": earlier, "NodeNames": NAMES, "Nodes": None})
        bind = asyncio.create_task(extender.post("bind", binding(created)))
        extender.deliver()
        assert await bind == {"Error": ""}
    assert reads_of_the_pod(fake_api) == 0


@pytest.mark.parametrize(
    ("fail", "error"),
    [
        (None, "pod team-a/worker-0 does not exist"),
        (
            500,
            "pod team-a/worker-0 is not in the extender's cache yet and could not be read: get "
            "Pod team-a/worker-0: InternalError: fake apiserver: injected failure",
        ),
    ],
    ids=["deleted", "unreadable"],
)
async def test_a_bind_of_a_pod_that_cannot_be_read_fails_with_the_reason(
    fake_api: FakeApiServer, core_v1: Any, fail: int | None, error: str
) -> None:
    async with watch_lagging(fake_api, core_v1) as extender:
        created = fake_api.create("pods", nodes.pod("worker-0", node_settings=True))
        if fail is None:
            fake_api.delete("pods", "worker-0", "team-a")
        else:
            fake_api.fail("GET", POD, fail)
        assert await extender.post("bind", binding(created)) == {"Error": error}
    if fail is not None:
        assert bound(fake_api) == ("", set())


async def test_a_bind_of_a_recreated_pod_names_both_uids(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    async with watch_lagging(fake_api, core_v1) as extender:
        created = fake_api.create("pods", nodes.pod("worker-0", node_settings=True))
        stale = {**binding(created), "PodUID": "uid-of-an-earlier-pod"}
        assert await extender.post("bind", stale) == {
            "Error": f"pod team-a/worker-0 has uid {created['metadata']['uid']}, not "
            "uid-of-an-earlier-pod"
        }
    assert bound(fake_api) == ("", set())


async def test_explain_reads_a_pod_the_watch_has_not_delivered(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    async with watch_lagging(fake_api, core_v1) as extender:
        fake_api.create("pods", nodes.pod("worker-0", node_settings=True))
        status, body = await extender.explain("worker-0")
        assert (status, body["summary"]) == (200, {"pass": 1, "fail": 0, "unresolvable": 1})
        assert await extender.explain("ghost") == (
            404,
            {"error": "pod team-a/ghost does not exist"},
        )
        fake_api.fail("GET", POD, 503)
        status, body = await extender.explain("worker-0")
        assert (status, body["error"]) == (
            503,
            "pod team-a/worker-0 is not in the extender's cache yet and could not be read: get "
            "Pod team-a/worker-0: ServiceUnavailable: fake apiserver: injected failure",
        )


def gang_member(index: int) -> Json:
    return nodes.pod(f"g-{index}", gpus=4, annotations={keys.GANG: "g", keys.GANG_SIZE: "2"})


async def test_gang_members_are_planned_once_the_watch_delivered_them(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    async with watch_lagging(fake_api, core_v1) as extender:
        members = [fake_api.create("pods", gang_member(i)) for i in range(2)]
        for member in members:
            args = {"Pod": member, "NodeNames": NAMES, "Nodes": None}
            answer = await extender.post("filter", args)
            assert answer["NodeNames"] == []
            assert "is not in the extender's cache yet" in answer["Error"]
        assert extender_plans(extender) == 0
        extender.deliver()
        await eventually(lambda: all(cached(extender, m) for m in members))
        for member in members:
            args = {"Pod": member, "NodeNames": NAMES, "Nodes": None}
            assert (await extender.post("filter", args))["NodeNames"] == ["gpu-1"]
        binds = [asyncio.create_task(extender.post("bind", binding(m))) for m in members]
        assert await asyncio.gather(*binds) == [{"Error": ""}, {"Error": ""}]
    stored = [fake_api.get("pods", f"g-{i}", "team-a")["spec"]["nodeName"] for i in range(2)]
    assert stored == ["gpu-1", "gpu-1"]


async def test_a_gang_member_the_watch_never_delivers_is_retried(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    async with watch_lagging(fake_api, core_v1) as extender:
        member = fake_api.create("pods", gang_member(0))
        await extender.post("filter", {"Pod": member, "NodeNames": NAMES, "Nodes": None})
        assert await extender.post("bind", binding(member)) == {
            "Error": "pod team-a/g-0 is not in the extender's cache yet (its watch lags by more "
            "than 0.5s; it binds only pods its watch delivered); the pod is retried"
        }
    assert "nodeName" not in fake_api.get("pods", "g-0", "team-a")["spec"]


def extender_plans(extender: Extender) -> int:
    return len(extender.app[EXTENDER].planner.plans)


def cached(extender: Extender, pod: Json) -> bool:
    meta = pod["metadata"]
    return extender.app[EXTENDER].source.cluster.pod(meta["namespace"], meta["name"]) is not None
