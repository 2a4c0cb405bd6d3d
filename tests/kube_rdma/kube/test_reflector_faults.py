"""The Reflector against a misbehaving fake apiserver: streams cut in the middle of an event,
duplicated and reordered events, 410 Gone in the middle of a stream or as the watch's HTTP
status, bookmarks that spare a re-list, an apiserver that refuses connections or answers 503 for
a while, and slow answers. After each, the cache equals the server's truth, and `in_sync()` said
when it could not be trusted."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from kube_rdma.kube.reflector import MIN_WATCH_SECONDS
from testbed.fakeapi import FakeApiServer, eventually
from testbed.fakeapi.faults import StreamFault
from tests.kube_rdma.kube.recorded import NAMESPACES, NODES, Recorder, calls, named, running


def truth(api: FakeApiServer) -> dict[str, str]:
    """What the cache must hold: every namespace's name and resourceVersion."""
    return {
        o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in api.objects("namespaces")
    }


def messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


class Clock:
    """A monotonic clock that moves when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        (StreamFault.CUT, "Unreachable: Response payload is not completed"),
        (StreamFault.TRUNCATE, "BrokenStream: cut in the middle of an event (109 bytes)"),
    ],
    ids=["connection closed", "response ended"],
)
async def test_a_stream_cut_mid_event_resumes_from_the_last_version(
    fake_api: FakeApiServer,
    core_v1: Any,
    fault: StreamFault,
    why: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    recorder, backoffs = Recorder(), list[float]()
    async with running(core_v1.list_namespace, recorder, backoffs) as reflector:
        await eventually(lambda: fake_api.watching == 1)
        fake_api.inject(fault, "namespaces")
        fake_api.create("namespaces", named("team-a"))  # 102, half of it sent
        await eventually(lambda: recorder.versions == truth(fake_api))
    assert recorder.log == ["replace default", "ADDED team-a 102"]
    assert calls(fake_api, NAMESPACES) == ["list", "watch@101", "watch@101"]
    assert (reflector.relists, backoffs) == (0, [0.5])
    [warning] = messages(caplog, logging.WARNING)
    assert warning.startswith(f"watch test objects: {why}")
    assert warning.endswith("; resuming from version 101; retrying in 0.5s")


async def test_duplicated_events_are_applied_once(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    recorder = Recorder()
    async with running(core_v1.list_namespace, recorder) as reflector:
        await eventually(lambda: fake_api.watching == 1)
        fake_api.inject(StreamFault.DUPLICATE, "namespaces", times=2)
        fake_api.create("namespaces", named("team-a"))  # 102, twice
        fake_api.patch("namespaces", "team-a", {"metadata": {"labels": {"a": "1"}}})  # 103, twice
        fake_api.create("namespaces", named("team-b"))  # 104
        await eventually(lambda: recorder.versions == truth(fake_api))
    assert recorder.log == [
        "replace default",
        "ADDED team-a 102",
        "MODIFIED team-a 103",
        "ADDED team-b 104",
    ]
    assert (reflector.ignored, reflector.relists) == (2, 0)


async def test_an_event_out_of_order_makes_it_relist(
    fake_api: FakeApiServer, core_v1: Any, caplog: pytest.LogCaptureFixture
) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    recorder = Recorder()
    caplog.set_level(logging.INFO, logger="kube_rdma.kube.reflector")
    async with running(core_v1.list_namespace, recorder) as reflector:
        await eventually(lambda: fake_api.watching == 1)
        fake_api.inject(StreamFault.REORDER, "namespaces")
        fake_api.create("namespaces", named("team-a"))  # 102, held back
        fake_api.create("namespaces", named("team-b"))  # 103, sent before 102
        await eventually(lambda: len(calls(fake_api, NAMESPACES)) == 4)
    assert (reflector.relists, reflector.in_sync()) == (1, True)
    assert recorder.log == ["replace default", "ADDED team-b 103", "replace default team-a team-b"]
    assert recorder.versions == truth(fake_api)
    assert messages(caplog, logging.INFO) == [
        "watch test objects: ADDED at version 102 out of order; re-listing"
    ]
    assert calls(fake_api, NAMESPACES) == ["list", "watch@101", "list", "watch@103"]


def mid_stream(api: FakeApiServer) -> list[str]:
    api.create("namespaces", named("team-a"))  # 102
    api.expire_watches()  # the open watch gets a 410 ERROR event after it
    return ["replace default", "ADDED team-a 102", "replace default team-a"]


def refused_watch(api: FakeApiServer) -> list[str]:
    api.faults.expired_as_http = True
    api.end_watches()
    api.create("namespaces", named("team-a"))  # 102
    api.compact()  # the watch from 101 is answered HTTP 410
    return ["replace default", "replace default team-a"]


@pytest.mark.parametrize("expire", [mid_stream, refused_watch], ids=["ERROR event", "HTTP 410"])
async def test_gone_relists_and_is_out_of_sync_until_the_list_completes(
    fake_api: FakeApiServer, core_v1: Any, expire: Callable[[FakeApiServer], list[str]]
) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    recorder = Recorder()
    async with running(core_v1.list_namespace, recorder) as reflector:
        assert not reflector.in_sync()
        await eventually(lambda: fake_api.watching == 1)
        assert reflector.in_sync()
        fake_api.faults.delay = 0.2  # every answer is slow: the re-list takes a while
        log = expire(fake_api)
        await eventually(lambda: reflector.relists == 1)
        assert not reflector.in_sync()
        await eventually(reflector.in_sync)
        fake_api.faults.delay = 0
    assert recorder.versions == truth(fake_api)
    assert recorder.log == log


async def test_a_bookmark_spares_a_relist_after_compaction(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    recorder = Recorder()
    async with running(core_v1.list_namespace, recorder) as reflector:
        await eventually(lambda: fake_api.watching == 1)
        fake_api.create("nodes", named("n1"))  # 102: not a namespace
        fake_api.bookmark()
        fake_api.end_watches()
        fake_api.compact()  # history up to 102 forgotten
        await eventually(lambda: calls(fake_api, NAMESPACES)[-1] == "watch@102")
        fake_api.create("namespaces", named("team-a"))  # 103
        await eventually(lambda: recorder.versions == truth(fake_api))
    assert reflector.relists == 0
    assert calls(fake_api, NODES) == []
    assert recorder.log == ["replace default", "ADDED team-a 103"]


@pytest.mark.parametrize("refuse", [True, False], ids=["connections refused", "503"])
async def test_an_outage_is_ridden_out_and_reported_past_the_bound(
    fake_api: FakeApiServer, core_v1: Any, refuse: bool
) -> None:
    fake_api.create("namespaces", named("default"))  # 101
    fake_api.create("namespaces", named("old"))  # 102
    recorder, clock, backoffs = Recorder(), Clock(), list[float]()
    running_ = running(core_v1.list_namespace, recorder, backoffs, clock=clock, stale_after=20)
    async with running_ as reflector:
        await eventually(lambda: fake_api.watching == 1)
        await fake_api.go_down(refuse=refuse)
        fake_api.create("namespaces", named("team-a"))  # 103, while down
        fake_api.delete("namespaces", "old")  # 104
        await eventually(lambda: len(backoffs) > 0)  # the watch failed
        clock.now += 20
        assert reflector.in_sync()  # within the bound: an apiserver restart is ridden out
        clock.now += MIN_WATCH_SECONDS
        assert not reflector.in_sync()
        await fake_api.come_back()
        await eventually(lambda: recorder.versions == truth(fake_api))
        await eventually(reflector.in_sync)
    assert reflector.relists == 0  # the history was kept: the watch resumed from 102
    assert recorder.log == ["replace default old", "ADDED team-a 103", "DELETED old 104"]
    assert set(calls(fake_api, NAMESPACES)[1:]) == {"watch@102"}
