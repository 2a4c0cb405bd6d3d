"""The Reflector over HTTP against the fake apiserver, through kubernetes-asyncio's CoreV1Api:
the list, the events that follow, resuming a watch the server ended, re-listing on 410 Gone, and
backing off on errors."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import pytest

from kube_rdma.core.objects import Json
from kube_rdma.kube.reflector import Reflector
from testbed.fakeapi import FakeApiServer, eventually
from tests.kube_rdma.kube.recorded import (
    INJECTED,
    NAMESPACES,
    NODES,
    WATCH_QUERY,
    Recorder,
    calls,
    named,
    running,
)


async def test_lists_then_follows_the_watch(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    fake_api.create("namespaces", named("kube-system"))  # 102
    recorder = Recorder()
    async with running(core_v1.list_namespace, recorder) as reflector:
        await eventually(lambda: fake_api.watching == 1)
        assert reflector.synced.is_set()
        fake_api.create("namespaces", named("team-a"))
        fake_api.patch("namespaces", "team-a", {"metadata": {"labels": {"team": "a"}}})
        fake_api.delete("namespaces", "default")
        await eventually(lambda: len(recorder.log) == 4)
    assert recorder.log == [
        "replace default kube-system",
        "ADDED team-a 103",
        "MODIFIED team-a 104",
        "DELETED default 105",
    ]
    assert recorder.versions == {"kube-system": "102", "team-a": "104"}
    assert [(r.method, r.path, r.query) for r in fake_api.requests] == [
        ("GET", NAMESPACES, {}),
        ("GET", NAMESPACES, {**WATCH_QUERY, "resourceVersion": "102"}),
    ]
    assert reflector.relists == 0


async def test_every_object_reaches_the_callbacks_transformed(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    """Listed items and watched objects alike; the watch still resumes from the versions the
    whole objects carried, though the transform drops them."""
    fake_api.create("nodes", named("n1", rack="r1"))  # 101
    seen: list[tuple[str, Json]] = []

    def labels_only(obj: Json) -> Json:
        return {"name": obj["metadata"]["name"], "labels": obj["metadata"]["labels"]}

    reflector = Reflector(
        core_v1.list_node,
        lambda items: seen.extend(("listed", o) for o in items),
        lambda kind, obj: seen.append((kind, obj)),
        "nodes",
        transform=labels_only,
    )
    task = asyncio.create_task(reflector.run())
    try:
        await eventually(lambda: fake_api.watching == 1)
        fake_api.create("nodes", named("n2", rack="r2"))  # 102
        fake_api.end_watches()
        await eventually(lambda: fake_api.watching == 1)
        fake_api.delete("nodes", "n1")  # 103
        await eventually(lambda: len(seen) == 3)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert seen == [
        ("listed", {"name": "n1", "labels": {"rack": "r1"}}),
        ("ADDED", {"name": "n2", "labels": {"rack": "r2"}}),
        ("DELETED", {"name": "n1", "labels": {"rack": "r1"}}),
    ]
    assert calls(fake_api, NODES) == ["list", "watch@101", "watch@102"]


async def test_lists_page_by_page(fake_api: FakeApiServer, core_v1: Any) -> None:
    for name in ("a", "b", "c", "d", "e"):
        fake_api.create("namespaces", named(name))  # 101-105
    recorder = Recorder()
    reflector = Reflector(
        core_v1.list_namespace, recorder.replace, recorder.event, "namespaces", page_size=2
    )
    task = asyncio.create_task(reflector.run())
    try:
        await eventually(lambda: fake_api.watching == 1)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert recorder.log == ["replace a b c d e"]
    assert [r.query for r in fake_api.requests] == [
        {"limit": "2"},
        {"limit": "2", "continue": "2"},
        {"limit": "2", "continue": "4"},
        {**WATCH_QUERY, "resourceVersion": "105"},
    ]


async def test_resumes_a_watch_the_server_ended(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("nodes", named("n1"))  # 101
    recorder = Recorder()
    async with running(core_v1.list_node, recorder) as reflector:
        await eventually(lambda: fake_api.watching == 1)
        fake_api.create("nodes", named("n2"))  # 102
        fake_api.end_watches()
        await eventually(lambda: fake_api.watching == 1)
        fake_api.patch("nodes", "n1", {"metadata": {"labels": {"rack": "r1"}}})  # 103
        await eventually(lambda: len(recorder.log) == 3)
    assert recorder.log == ["replace n1", "ADDED n2 102", "MODIFIED n1 103"]
    assert calls(fake_api, NODES) == ["list", "watch@101", "watch@102"]
    assert reflector.relists == 0


async def test_resumes_from_a_bookmark(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    recorder = Recorder()
    async with running(core_v1.list_namespace, recorder):
        await eventually(lambda: fake_api.watching == 1)
        fake_api.create("nodes", named("n1"))  # 102: a write the namespace watch does not see
        fake_api.bookmark()
        fake_api.end_watches()
        await eventually(lambda: fake_api.watching == 1)
    assert calls(fake_api, NAMESPACES) == ["list", "watch@101", "watch@102"]
    assert recorder.log == ["replace default"]


async def test_backs_off_when_watches_keep_closing_empty(
    fake_api: FakeApiServer, core_v1: Any, backoffs: list[float]
) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    recorder = Recorder()
    async with running(core_v1.list_namespace, recorder, backoffs) as reflector:
        for _ in range(3):
            await eventually(lambda: fake_api.watching == 1)
            fake_api.end_watches()  # closed at once, no event: a "very short watch"
        await eventually(lambda: fake_api.watching == 1)
        fake_api.create("namespaces", named("team-a"))  # 102
        await eventually(lambda: len(recorder.log) == 2)
        fake_api.end_watches()  # this watch delivered an event: healthy, backoff resets
        await eventually(lambda: fake_api.watching == 1)
        fake_api.end_watches()
        await eventually(lambda: fake_api.watching == 1)
    assert backoffs == [0.5, 1.0, 2.0, 0.5]
    assert calls(fake_api, NAMESPACES) == ["list"] + ["watch@101"] * 4 + ["watch@102"] * 2
    assert reflector.relists == 0


def compact(api: FakeApiServer) -> str:
    api.compact()
    return "too old resource version: 101 (102)"


def answer_410(api: FakeApiServer) -> str:
    api.fail("GET", NAMESPACES, 410, watch=True)
    return INJECTED


@pytest.mark.parametrize("expire", [compact, answer_410], ids=["ERROR event", "HTTP 410"])
async def test_relists_when_the_watch_expired(
    fake_api: FakeApiServer,
    core_v1: Any,
    expire: Callable[[FakeApiServer], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    recorder = Recorder()
    caplog.set_level(logging.INFO, logger="kube_rdma.kube.reflector")
    async with running(core_v1.list_namespace, recorder) as reflector:
        await eventually(lambda: fake_api.watching == 1)
        fake_api.end_watches()
        fake_api.create("namespaces", named("team-a"))  # 102, before any watch is open again
        message = expire(fake_api)
        await eventually(lambda: reflector.relists == 1 and fake_api.watching == 1)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        f"watch test objects: Expired: {message}; re-listing"
    ]
    assert calls(fake_api, NAMESPACES) == ["list", "watch@101", "watch@101", "list", "watch@102"]
    assert recorder.log == ["replace default", "replace default team-a"]
    assert recorder.versions == {"default": "101", "team-a": "102"}


@pytest.fixture
def backoffs() -> list[float]:
    """The Reflector's backoff sleeps, in order."""
    return []


@pytest.mark.parametrize(("code", "reason"), [(500, "InternalError"), (503, "ServiceUnavailable")])
async def test_retries_a_failing_list_with_backoff(
    fake_api: FakeApiServer,
    core_v1: Any,
    backoffs: list[float],
    code: int,
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    fake_api.fail("GET", NAMESPACES, code, times=3, watch=False)
    recorder = Recorder()
    async with running(core_v1.list_namespace, recorder, backoffs) as reflector:
        await eventually(lambda: fake_api.watching == 1)
        assert reflector.synced.is_set()
    assert backoffs == [0.5, 1.0, 2.0]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"list test objects: {reason}: {INJECTED}; retrying in {delay}s"
        for delay in ("0.5", "1.0", "2.0")
    ]
    assert calls(fake_api, NAMESPACES) == ["list", "list", "list", "list", "watch@101"]
    assert recorder.log == ["replace default"]
    assert reflector.relists == 0


async def test_resumes_after_a_failing_watch(
    fake_api: FakeApiServer, core_v1: Any, backoffs: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    """A 500 on the watch is retried from the list's version after a backoff, without a
    re-list, as client-go does."""
    fake_api.create("namespaces", named("default"))  # 101
    fake_api.fail("GET", NAMESPACES, 500, watch=True)
    recorder = Recorder()
    async with running(core_v1.list_namespace, recorder, backoffs) as reflector:
        await eventually(lambda: fake_api.watching == 1)
    assert backoffs == [0.5]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"watch test objects: InternalError: {INJECTED}; resuming from version 101; "
        "retrying in 0.5s"
    ]
    assert calls(fake_api, NAMESPACES) == ["list", "watch@101", "watch@101"]
    assert recorder.log == ["replace default"]
    assert reflector.relists == 0
