"""Namespace labels: the live cache against the fake apiserver over HTTP, and the static file."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from kube_rdma.core.keys import INJECTION
from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import ServerError
from testbed.fakeapi import FakeApiServer, eventually
from webhook.namespaces import LiveNamespaces, StaticNamespaces

ENFORCE = "pod-security.kubernetes.io/enforce"
TEAM_A = {INJECTION: "enabled", ENFORCE: "privileged"}


def namespace(name: str, labels: dict[str, str] | None = None) -> Json:
    return {"metadata": {"name": name, "labels": labels or {}}}


@pytest.fixture
async def api() -> AsyncIterator[FakeApiServer]:
    async with FakeApiServer() as server:
        yield server


@pytest.fixture
async def live(api: FakeApiServer) -> AsyncIterator[LiveNamespaces]:
    async with api.api_client() as api_client:
        yield LiveNamespaces(client.CoreV1Api(api_client))


@contextlib.asynccontextmanager
async def synced(live: LiveNamespaces) -> AsyncIterator[None]:
    """Run the namespaces' list + watch until the block ends, entering it once synced."""
    task = asyncio.create_task(live.reflector.run())
    try:
        await eventually(live.ready)
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def reads(api: FakeApiServer) -> list[str]:
    """The paths of single-namespace GETs, the fallback for namespaces the cache lacks."""
    return [r.path for r in api.requests if r.path.startswith("/api/v1/namespaces/")]


async def test_ready_once_synced_with_the_listed_labels(
    api: FakeApiServer, live: LiveNamespaces
) -> None:
    api.create("namespaces", namespace("team-a", TEAM_A))
    api.create("namespaces", namespace("default"))
    assert not live.ready()
    async with synced(live):
        assert live.ready()
        assert await live.labels("team-a") == TEAM_A
        assert await live.labels("default") == {}
    assert reads(api) == []


async def test_label_changes_arrive_through_the_watch(
    api: FakeApiServer, live: LiveNamespaces
) -> None:
    api.create("namespaces", namespace("team-a", TEAM_A))
    async with synced(live):
        api.create("namespaces", namespace("team-b", {INJECTION: "enabled"}))
        api.patch("namespaces", "team-a", {"metadata": {"labels": {ENFORCE: "restricted"}}})
        # Events arrive in order: once team-a has changed, team-b is cached too.
        await eventually(_labels_are(live, "team-a", TEAM_A | {ENFORCE: "restricted"}))
        assert await live.labels("team-b") == {INJECTION: "enabled"}
    assert reads(api) == []


def _labels_are(live: LiveNamespaces, name: str, expected: Json) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await live.labels(name) == expected

    return check


async def test_a_deleted_namespace_loses_its_labels(
    api: FakeApiServer, live: LiveNamespaces
) -> None:
    api.create("namespaces", namespace("team-a", TEAM_A))
    async with synced(live):
        api.delete("namespaces", "team-a")
        await eventually(_labels_are(live, "team-a", {}))
    assert reads(api) == ["/api/v1/namespaces/team-a"]


async def test_a_namespace_not_seen_yet_is_read_once(
    api: FakeApiServer, live: LiveNamespaces
) -> None:
    async with synced(live):
        pass
    api.create("namespaces", namespace("team-new", TEAM_A))  # the watch has stopped: unseen
    assert await live.labels("team-new") == TEAM_A
    assert await live.labels("team-new") == TEAM_A
    assert reads(api) == ["/api/v1/namespaces/team-new"]


async def test_an_unknown_namespace_has_no_labels(api: FakeApiServer, live: LiveNamespaces) -> None:
    assert await live.labels("nope") == {}
    assert await live.labels("nope") == {}
    assert reads(api) == ["/api/v1/namespaces/nope", "/api/v1/namespaces/nope"]


async def test_a_failing_read_raises(api: FakeApiServer, live: LiveNamespaces) -> None:
    api.fail("GET", "/api/v1/namespaces/team-a", 503)
    with pytest.raises(ServerError) as raised:
        await live.labels("team-a")
    assert (raised.value.status, str(raised.value)) == (
        503,
        "read Namespace team-a: ServiceUnavailable: fake apiserver: injected failure",
    )


NAMESPACE_A = """
  apiVersion: v1
  kind: Namespace
  metadata:
    name: team-a
    labels: {kube-rdma.io/injection: enabled, pod-security.kubernetes.io/enforce: privileged}
"""
NAMESPACE_B = """
  apiVersion: v1
  kind: Namespace
  metadata: {name: team-b}
"""
CONFIG_MAP = """
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: not-a-namespace, labels: {kube-rdma.io/injection: enabled}}
"""


def _item(text: str) -> str:
    return "-" + text.lstrip("\n")[1:]


FILES = {
    "kind List": "apiVersion: v1\nkind: List\nitems:\n"
    + "".join(map(_item, [NAMESPACE_A, NAMESPACE_B, CONFIG_MAP])),
    "bare list": "".join(map(_item, [NAMESPACE_A, NAMESPACE_B, CONFIG_MAP])),
    "documents": "---".join([NAMESPACE_A, NAMESPACE_B, CONFIG_MAP, "\n"]),
    "json NamespaceList": (
        '{"apiVersion": "v1", "kind": "NamespaceList", "items": [{"kind": "Namespace", '
        '"metadata": {"name": "team-a", "labels": {"kube-rdma.io/injection": "enabled", '
        '"pod-security.kubernetes.io/enforce": "privileged"}}}, {"kind": "Namespace", '
        '"metadata": {"name": "team-b"}}]}'
    ),
}


@pytest.mark.parametrize("text", FILES.values(), ids=FILES.keys())
async def test_static_namespaces_from_a_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "namespaces.yaml"
    path.write_text(text)
    static = StaticNamespaces.from_file(path)
    assert static.ready()
    assert await static.labels("team-a") == TEAM_A
    assert await static.labels("team-b") == {}
    assert await static.labels("not-a-namespace") == {}
    assert await static.labels("nope") == {}


async def test_static_namespaces_from_an_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "namespaces.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n")
    assert await StaticNamespaces.from_file(path).labels("team-a") == {}
