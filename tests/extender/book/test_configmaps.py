"""Plan records in ConfigMaps when the apiserver fails or races them: every conflict and retry
of `extender/book/configmaps.py`, the records read back by a process started after them, and
what a failed write does to `flush` (the barrier's gate before a bind)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from extender.book.configmaps import ConfigMapRecords
from extender.book.records import PlanRecord, encode
from testbed.fakeapi import FakeApiServer, eventually

GANG = ("team-a", "llama")
NAME = "gang-team-a-llama-f344170265"
RECORD = PlanRecord(GANG, 2, "leaf-b", ("b0", "b1"), "extender-1")
COLLECTION = "/api/v1/namespaces/kube-rdma/configmaps"
ITEM = f"/api/v1/namespaces/kube-rdma/configmaps/{NAME}"


class Running:
    """A ConfigMapRecords with its list + watch running, stopped on exit."""

    def __init__(self, core_v1: Any, identity: str = "extender-2") -> None:
        self.records = ConfigMapRecords(core_v1, "kube-rdma", identity)

    async def __aenter__(self) -> ConfigMapRecords:
        self._task = asyncio.create_task(self.records.run())
        await eventually(self.records.ready)
        return self.records

    async def __aexit__(self, *exc: object) -> None:
        self._task.cancel()


@pytest.fixture
async def records(core_v1: Any) -> AsyncIterator[ConfigMapRecords]:
    async with Running(core_v1) as running:
        yield running


def stored(api: FakeApiServer) -> list[tuple[str, str]]:
    """(slots, holder) of each record on the apiserver."""
    return [
        (o["data"]["slots"], o["data"]["holder"]) for o in api.objects("configmaps", "kube-rdma")
    ]


def writes(api: FakeApiServer) -> list[tuple[str, str]]:
    """The method and path of every ConfigMap request that was not a list or watch."""
    return [
        (r.method, "item" if r.path == ITEM else "collection")
        for r in api.requests
        if r.path in (ITEM, COLLECTION) and (r.method, r.path) != ("GET", COLLECTION)
    ]


async def test_records_written_before_a_restart_are_read_back(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    """A process started after another wrote holds its records, and rewrites one in place."""
    fake_api.create("configmaps", encode(RECORD, "kube-rdma"), "kube-rdma")
    async with Running(core_v1) as records:
        assert dict(records.saved()) == {GANG: RECORD}
        assert records.foreign_changes == 1
        records.put(PlanRecord(GANG, 2, "leaf-a", ("a0", "a1")))
        assert await records.flush(GANG)
    assert stored(fake_api) == [('["a0","a1"]', "extender-2")]
    assert writes(fake_api) == [("PUT", "item")]  # replaced at the version read back


async def test_a_create_that_finds_the_record_there_replaces_it(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    """Another process created it after this one's list: 409 AlreadyExists, read, replace."""
    fake_api.create("configmaps", encode(RECORD, "kube-rdma"), "kube-rdma")
    records._replace([])  # this process has not seen it yet
    records.put(PlanRecord(GANG, 2, "leaf-a", ("a0", "a1")))
    assert await records.flush(GANG)
    assert stored(fake_api) == [('["a0","a1"]', "extender-2")]
    # 409 AlreadyExists on the create, then a read and a replace.
    assert writes(fake_api) == [("POST", "collection"), ("GET", "item"), ("PUT", "item")]


async def test_a_replace_that_lost_a_race_reads_again_and_writes_over(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    records.put(RECORD)
    assert await records.flush(GANG)
    fake_api.fail("PUT", ITEM, 409)
    records.put(PlanRecord(GANG, 2, "leaf-a", ("a0", "a1")))
    assert await records.flush(GANG)
    assert stored(fake_api) == [('["a0","a1"]', "extender-2")]
    # The first replace answered 409: read again, replace at the version read.
    assert writes(fake_api) == [
        ("POST", "collection"),
        ("PUT", "item"),
        ("GET", "item"),
        ("PUT", "item"),
    ]


async def test_a_replace_of_a_record_deleted_meanwhile_creates_it(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    records.put(RECORD)
    assert await records.flush(GANG)
    await eventually(lambda: GANG in records.saved())
    fake_api.delete("configmaps", NAME, "kube-rdma")
    records._versions[GANG] = "7"  # the deletion not seen yet: the replace finds nothing
    records.put(PlanRecord(GANG, 2, "leaf-a", ("a0", "a1")))
    assert await records.flush(GANG)
    assert stored(fake_api) == [('["a0","a1"]', "extender-2")]
    # The replace answered 404: read (nothing), create.
    assert writes(fake_api)[-3:] == [("PUT", "item"), ("GET", "item"), ("POST", "collection")]


async def test_a_failed_write_is_tried_once_more_by_flush(
    fake_api: FakeApiServer, records: ConfigMapRecords, caplog: pytest.LogCaptureFixture
) -> None:
    fake_api.fail("POST", COLLECTION, 500)
    with caplog.at_level(logging.WARNING, logger="kube_rdma.extender"):
        records.put(RECORD)
        assert await records.flush(GANG)
    assert stored(fake_api) == [('["b0","b1"]', "extender-2")]
    assert writes(fake_api) == [("POST", "collection"), ("POST", "collection")]
    assert [r.getMessage() for r in caplog.records] == [
        "gang team-a/llama: plan record not written: create gang plan record: InternalError: "
        "fake apiserver: injected failure"
    ]


async def test_a_write_failing_twice_fails_the_flush(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    fake_api.fail("POST", COLLECTION, 500, times=2)
    records.put(RECORD)
    assert not await records.flush(GANG)
    assert stored(fake_api) == []


async def test_a_removal_of_a_record_gone_or_taken_over_is_done(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    for code in (404, 409):
        records.put(RECORD)
        assert await records.flush(GANG)
        fake_api.fail("DELETE", ITEM, code)
        records.remove(GANG)
        assert await records.flush(GANG)
        assert writes(fake_api)[-1] == ("DELETE", "item")
        assert stored(fake_api) == [('["b0","b1"]', "extender-2")]  # left as it was
        fake_api.delete("configmaps", NAME, "kube-rdma")
        await eventually(lambda: GANG not in records.saved())


async def test_a_removal_failing_is_not_done(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    records.put(RECORD)
    assert await records.flush(GANG)
    fake_api.fail("DELETE", ITEM, 500, times=2)
    records.remove(GANG)
    assert not await records.flush(GANG)
    assert stored(fake_api) == [('["b0","b1"]', "extender-2")]


async def test_a_wish_changed_during_a_write_is_written_after_it(
    fake_api: FakeApiServer, records: ConfigMapRecords
) -> None:
    """The writer loops until the last wish is what it wrote: put, then remove at once."""
    records.put(RECORD)
    records.remove(GANG)
    assert await records.flush(GANG)
    assert stored(fake_api) == []
    assert writes(fake_api)[-1] == ("DELETE", "item")


async def test_a_hold_is_written_with_its_victims_and_read_back_as_a_hold(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    """A hold's record carries the hold (priority, GPUs, victims): the process that takes over
    reads it back as a hold, not as a plan of its held nodes."""
    hold = {"priority": 1000, "gpus": 32, "units": [["gang team-a/low0", [["team-a", "low0-0"]]]]}
    async with Running(core_v1, "extender-1") as records:
        records.put(PlanRecord(GANG, 0, "leaf-0", ("n0", "n1"), hold=hold))
        assert await records.flush(GANG)
    (stored_map,) = fake_api.objects("configmaps", "kube-rdma")
    assert stored_map["metadata"]["labels"]["kube-rdma.io/gang-hold"] == "true"
    async with Running(core_v1) as records:
        assert dict(records.saved()) == {
            GANG: PlanRecord(GANG, 0, "leaf-0", ("n0", "n1"), "extender-1", hold)
        }
