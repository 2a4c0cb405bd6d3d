"""The emulator's apiserver client over the real REST protocol, against the fake apiserver:
lists with their resourceVersion, watches from it, pods created, deleted and bound, and the
typed errors of a refused or unanswered call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from extender.sim import Apiserver, ApiserverError, Gone, NotFound
from extender.sim.informer import NON_TERMINAL
from testbed.fakeapi import FakeApiServer
from tests.extender.sim.cluster import node, pod
from tests.extender.sim.stub_extender import closed_port


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_a_list_gives_the_items_and_its_resource_version(
    fake_api: FakeApiServer, session: aiohttp.ClientSession
) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w"))
    fake_api.create("pods", pod("done") | {"status": {"phase": "Succeeded"}})
    api = Apiserver(fake_api.host + "/", session)
    nodes, version = await api.list("nodes")
    pods, _ = await api.list("pods", NON_TERMINAL)
    assert ([n["metadata"]["name"] for n in nodes], version) == (["n1"], str(fake_api.version))
    assert pods == [fake_api.get("pods", "w", "team-a")]
    assert fake_api.requests[-1].query == {"fieldSelector": NON_TERMINAL}


async def test_a_watch_starts_after_the_version_and_a_compacted_one_is_gone(
    fake_api: FakeApiServer, session: aiohttp.ClientSession
) -> None:
    api = Apiserver(fake_api.host, session)
    _, version = await api.list("pods")
    fake_api.create("pods", pod("w"))
    events = api.watch("pods", version, NON_TERMINAL)
    event = await anext(events)
    await events.aclose()
    assert event == {"type": "ADDED", "object": fake_api.get("pods", "w", "team-a")}
    fake_api.compact()
    with pytest.raises(Gone) as gone:
        await anext(api.watch("pods", version))
    assert (str(gone.value), gone.value.code) == (
        f"too old resource version: {version} ({fake_api.version}) (410)",
        410,
    )


async def test_pods_are_created_bound_and_deleted(
    fake_api: FakeApiServer, session: aiohttp.ClientSession
) -> None:
    api = Apiserver(fake_api.host, session)
    created = await api.create("pods", pod("w"))
    await api.bind("team-a", "w", created["metadata"]["uid"], "n1")
    assert fake_api.get("pods", "w", "team-a")["spec"]["nodeName"] == "n1"
    with pytest.raises(ApiserverError) as conflict:
        await api.bind("team-a", "w", None, "n2")
    await api.delete("pods", "w", "team-a")
    with pytest.raises(NotFound) as missing:
        await api.delete("pods", "w", "team-a")
    assert [(r.method, r.path) for r in fake_api.requests] == [
        ("POST", "/api/v1/namespaces/team-a/pods"),
        ("POST", "/api/v1/namespaces/team-a/pods/w/binding"),
        ("POST", "/api/v1/namespaces/team-a/pods/w/binding"),
        ("DELETE", "/api/v1/namespaces/team-a/pods/w"),
        ("DELETE", "/api/v1/namespaces/team-a/pods/w"),
    ]
    assert (str(conflict.value), conflict.value.code) == (
        'Operation cannot be fulfilled on pods/binding "w": pod w is already assigned to node '
        '"n1" (409)',
        409,
    )
    assert (str(missing.value), missing.value.code) == ('pods "w" not found (404)', 404)


async def test_an_unanswered_call_is_an_error_without_a_code(
    session: aiohttp.ClientSession,
) -> None:
    api = Apiserver(f"http://127.0.0.1:{closed_port()}", session)
    with pytest.raises(ApiserverError) as refused:
        await api.list("nodes")
    assert refused.value.code is None
    assert "Cannot connect to host 127.0.0.1" in str(refused.value)
