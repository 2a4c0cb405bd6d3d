"""The fake apiserver's faults on the wire, read with a plain HTTP client: exactly what a cut,
truncated, duplicated or reordered watch stream carries, a compacted version refused with HTTP
410, and an outage (refused connections or 503) both in-process and from `python -m
testbed.fakeapi --outage`."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import orjson
import pytest

from testbed.fakeapi import FakeApiServer, eventually
from testbed.fakeapi.faults import StreamFault

REPO = Path(__file__).resolve().parents[2]
WATCH = "/api/v1/namespaces?watch=true&resourceVersion=100"


def added(name: str, version: int) -> bytes:
    obj = {
        "metadata": {
            "name": name,
            "uid": "",
            "creationTimestamp": "",
            "resourceVersion": str(version),
        },
        "apiVersion": "v1",
        "kind": "Namespace",
    }
    return orjson.dumps({"type": "ADDED", "object": obj}) + b"\n"


async def stream(api: FakeApiServer, fault: StreamFault) -> bytes:
    """What a watch from 100 reads while two namespaces are created, with `fault` injected."""
    async with aiohttp.ClientSession() as session, session.get(api.host + WATCH) as response:
        await eventually(lambda: api.watching == 1)
        api.inject(fault, "namespaces")
        for name in ("a", "b"):
            api.create("namespaces", {"metadata": {"name": name}})
        await eventually(lambda: api.faults.pending == 0)
        api.end_watches()
        try:
            return await response.content.read()
        except aiohttp.ClientPayloadError:
            return b"<connection closed>"


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (StreamFault.DUPLICATE, [("a", 101), ("a", 101), ("b", 102)]),
        (StreamFault.REORDER, [("b", 102), ("a", 101)]),
    ],
    ids=["duplicate", "reorder"],
)
async def test_duplicated_and_reordered_events(
    fault: StreamFault, expected: list[tuple[str, int]]
) -> None:
    async with FakeApiServer() as api:
        lines = await stream(api, fault)
    assert [_blanked(line) for line in lines.splitlines(keepends=True)] == [
        added(name, version) for name, version in expected
    ]


async def test_a_truncated_stream_ends_in_the_middle_of_an_event() -> None:
    async with FakeApiServer() as api:
        lines = await stream(api, StreamFault.TRUNCATE)
    assert not lines.endswith(b"\n")
    assert lines.startswith(b'{"type":"ADDED","object":{"metadata":{"name":"a"')


async def test_a_cut_stream_closes_the_connection() -> None:
    async with FakeApiServer() as api:
        assert await stream(api, StreamFault.CUT) == b"<connection closed>"


async def test_a_compacted_version_can_be_refused_with_http_410() -> None:
    async with FakeApiServer() as api, aiohttp.ClientSession() as session:
        api.create("namespaces", {"metadata": {"name": "a"}})
        api.compact()
        api.faults.expired_as_http = True
        async with session.get(api.host + WATCH) as response:
            assert response.status == 410
            assert (await response.json())["message"] == "too old resource version: 100 (101)"


@pytest.mark.parametrize("refuse", [True, False], ids=["refused", "503"])
async def test_an_outage(refuse: bool) -> None:
    async with FakeApiServer() as api, aiohttp.ClientSession() as session:
        await api.go_down(refuse=refuse)
        api.create("namespaces", {"metadata": {"name": "a"}})
        if refuse:
            with pytest.raises(aiohttp.ClientConnectionError):
                await session.get(api.host + "/api/v1/namespaces")
        else:
            async with session.get(api.host + "/api/v1/namespaces") as response:
                assert response.status == 503
        await api.come_back()
        async with session.get(api.host + "/api/v1/namespaces") as response:
            assert [o["metadata"]["name"] for o in (await response.json())["items"]] == ["a"]


def test_outage_and_slow_flags_of_the_process() -> None:
    command = [sys.executable, "-m", "testbed.fakeapi", "--outage", "0.3:0.4", "--outage-503"]
    process = subprocess.Popen(
        [*command, "--slow", "0.01"], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[4].rstrip(":") + "/api/v1/namespaces"
        assert _status(url) == 200
        assert process.stdout.readline() == "fake apiserver down for 0.4s\n"
        assert _status(url) == 503
        assert process.stdout.readline() == "fake apiserver up again\n"
        assert _status(url) == 200
    finally:
        process.terminate()
        process.wait(timeout=10)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return e.code


def _blanked(line: bytes) -> bytes:
    """The line with uid and creationTimestamp blanked, which the test does not choose."""
    event = orjson.loads(line)
    event["object"]["metadata"] |= {"uid": "", "creationTimestamp": ""}
    return orjson.dumps(event) + b"\n"
