"""The emulator's apiserver adapter against the fake apiserver, through kubernetes-asyncio: lists
with their resourceVersion, watches from it, pods created, deleted and bound, and the typed
errors of kube_rdma/kube/errors.py for a refused, expired or unanswered call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kube_rdma.kube.errors import ApiError, Conflict, Gone, NotFound, Unreachable
from kubesim.scheduler import Apiserver, connect
from kubesim.scheduler.informer import NON_TERMINAL
from testbed.fakeapi import FakeApiServer
from testbed.net import free_port
from tests.kubesim.scheduler.cluster import node, pod

UNREACHABLE_HINT = "(check the apiserver address and the network path to it)"


@pytest.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[Apiserver]:
    async with connect(fake_api.host + "/") as api:
        yield api


async def test_a_list_gives_the_items_and_its_resource_version(
    fake_api: FakeApiServer, api: Apiserver
) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w"))
    fake_api.create("pods", pod("done") | {"status": {"phase": "Succeeded"}})
    nodes, version = await api.list("nodes")
    pods, _ = await api.list("pods", NON_TERMINAL)
    assert ([n["metadata"]["name"] for n in nodes], version) == (["n1"], str(fake_api.version))
    assert pods == [fake_api.get("pods", "w", "team-a")]
    assert [(r.path, r.query) for r in fake_api.requests] == [
        ("/api/v1/nodes", {}),
        ("/api/v1/pods", {"fieldSelector": NON_TERMINAL}),
    ]


async def test_a_watch_starts_after_the_version_with_bookmarks(
    fake_api: FakeApiServer, api: Apiserver
) -> None:
    _, version = await api.list("pods")
    fake_api.create("pods", pod("w"))
    events = api.watch("pods", version, NON_TERMINAL)
    event = await anext(events)
    await events.aclose()
    assert event == {"type": "ADDED", "object": fake_api.get("pods", "w", "team-a")}
    assert fake_api.requests[-1].query == {
        "watch": "True",
        "resourceVersion": version,
        "allowWatchBookmarks": "True",
        "fieldSelector": NON_TERMINAL,
    }


async def test_an_expired_version_is_gone_as_an_error_event(
    fake_api: FakeApiServer, api: Apiserver
) -> None:
    _, version = await api.list("pods")
    fake_api.create("pods", pod("w"))
    fake_api.compact()
    with pytest.raises(Gone) as gone:
        await anext(api.watch("pods", version))
    assert (str(gone.value), gone.value.status) == (
        f"watch pods: Expired: too old resource version: {version} ({fake_api.version})",
        410,
    )


async def test_an_expired_version_is_gone_as_a_status(
    fake_api: FakeApiServer, api: Apiserver
) -> None:
    fake_api.fail("GET", "/api/v1/nodes", 410, watch=True)
    with pytest.raises(Gone) as gone:
        await anext(api.watch("nodes", "5"))
    assert str(gone.value) == "watch nodes: Expired: fake apiserver: injected failure"


async def test_pods_are_created_bound_and_deleted(fake_api: FakeApiServer, api: Apiserver) -> None:
    created = await api.create_pod(pod("w"))
    uid = created["metadata"]["uid"]
    await api.bind("team-a", "w", uid, "n1")
    assert fake_api.get("pods", "w", "team-a")["spec"]["nodeName"] == "n1"
    with pytest.raises(Conflict) as conflict:
        await api.bind("team-a", "w", None, "n2")
    await api.delete_pod("team-a", "w")
    with pytest.raises(NotFound) as missing:
        await api.delete_pod("team-a", "w")
    assert [(r.method, r.path) for r in fake_api.requests] == [
        ("POST", "/api/v1/namespaces/team-a/pods"),
        ("POST", "/api/v1/namespaces/team-a/pods/w/binding"),
        ("POST", "/api/v1/namespaces/team-a/pods/w/binding"),
        ("DELETE", "/api/v1/namespaces/team-a/pods/w"),
        ("DELETE", "/api/v1/namespaces/team-a/pods/w"),
    ]
    assert [r.body["metadata"] for r in fake_api.requests[1:3]] == [
        {"name": "w", "namespace": "team-a", "uid": uid},
        {"name": "w", "namespace": "team-a"},
    ]
    assert fake_api.requests[1].body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert str(conflict.value) == (
        'binding team-a/w to n2: Conflict: Operation cannot be fulfilled on pods/binding "w": '
        'pod w is already assigned to node "n1"'
    )
    assert str(missing.value) == 'delete pod team-a/w: NotFound: pods "w" not found'


async def test_an_unanswered_call_is_unreachable() -> None:
    port = free_port()
    async with connect(f"http://127.0.0.1:{port}") as api:
        with pytest.raises(ApiError) as refused:
            await api.list("nodes")
    assert (type(refused.value), refused.value.status) == (Unreachable, None)
    assert str(refused.value) == (
        f"list nodes: Unreachable: Cannot connect to host 127.0.0.1:{port} ssl:default "
        f"[Connect call failed ('127.0.0.1', {port})] {UNREACHABLE_HINT}"
    )
