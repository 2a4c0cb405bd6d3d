"""The extender when something under it fails: the 500 answer of any verb whose handler raises,
gang-plan upkeep that raises, and a gang bind refused because its plan record could not be
written to the apiserver."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from extender.app import EXTENDER, Settings, create_app, metrics_app
from extender.book.configmaps import ConfigMapRecords
from extender.cluster.snapshot import SnapshotSource
from kube_rdma.core import keys
from testbed import net
from testbed.builders import nodes
from testbed.fakeapi import FakeApiServer, eventually

NODES = [nodes.node(f"gpu-{i}", nodes.hgx()) for i in range(1, 3)]
NAMES = ["gpu-1", "gpu-2"]
PAIR = [
    nodes.pod(f"pair-{i}", annotations={keys.GANG: "pair", keys.GANG_SIZE: "2"}) for i in (0, 1)
]
ARGS: dict[str, Any] = {
    "filter": {"Pod": PAIR[0], "NodeNames": NAMES},
    "prioritize": {"Pod": PAIR[0], "NodeNames": NAMES},
    "bind": {"PodName": "pair-0", "PodNamespace": "team-a", "PodUID": "", "Node": "gpu-1"},
}


async def post(session: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, Any]:
    async with session.post(url, data=orjson.dumps(body)) as response:
        return response.status, orjson.loads(await response.read())


@pytest.mark.parametrize("verb", ["filter", "prioritize", "bind"])
async def test_a_handler_that_raises_answers_500(
    verb: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(Settings(), SnapshotSource([*NODES, *PAIR]))

    def broken(*_: object) -> None:
        raise RuntimeError("the cluster model is broken")

    async def broken_bind(*_: object) -> None:
        broken()

    scheduler = app[EXTENDER].scheduler
    method = {"prioritize": "answer_scores"}.get(verb, verb)  # what the handler calls
    monkeypatch.setattr(scheduler, method, broken_bind if verb == "bind" else broken)
    async with (
        net.serving(app) as base,
        net.serving(metrics_app(app)) as metrics_base,
        aiohttp.ClientSession() as session,
    ):
        with caplog.at_level(logging.ERROR, logger="kube_rdma.extender"):
            answer = await post(session, f"{base}/{verb}", ARGS[verb])
        async with session.get(f"{metrics_base}/metrics") as response:
            metrics = await response.text()
    assert answer == (
        500,
        {"error": "kube-rdma extender internal error (RuntimeError); see its logs"},
    )
    [record] = caplog.records
    assert (record.getMessage(), record.exc_info and str(record.exc_info[1])) == (
        f"/{verb} failed",
        "the cluster model is broken",
    )
    assert f'kube_rdma_extender_calls_total{{result="error",verb="{verb}"}} 1.0' in metrics


async def test_gang_plan_upkeep_that_raises_is_logged_and_tried_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(Settings(sweep_interval=0.01), SnapshotSource([*NODES, *PAIR]))
    sweeps: list[int] = []

    def failing_sweep() -> None:
        sweeps.append(len(sweeps))
        raise KeyError("pair-0")

    monkeypatch.setattr(app[EXTENDER].scheduler, "sweep", failing_sweep)
    with caplog.at_level(logging.ERROR, logger="kube_rdma.extender"):
        async with net.serving(app):
            await eventually(lambda: len(sweeps) >= 2, within=30)
    messages = {(r.getMessage(), str(r.exc_info[1]) if r.exc_info else "") for r in caplog.records}
    assert messages == {("gang plan upkeep failed", "'pair-0'")}


@pytest.fixture
async def recorded_app(
    fake_api: FakeApiServer, core_v1: Any
) -> AsyncIterator[tuple[str, aiohttp.ClientSession]]:
    """The extender with its gang plans recorded in ConfigMaps on the fake apiserver."""
    records = ConfigMapRecords(core_v1, "kube-rdma", "extender-1")
    app = create_app(Settings(), SnapshotSource([*NODES, *PAIR]), records=records)
    async with net.serving(app) as base, aiohttp.ClientSession() as session:
        await eventually(records.ready)
        yield base, session


async def test_a_bind_is_refused_while_its_gang_s_plan_is_not_written(
    fake_api: FakeApiServer, recorded_app: tuple[str, aiohttp.ClientSession]
) -> None:
    base, session = recorded_app
    fake_api.fail("POST", "/api/v1/namespaces/kube-rdma/configmaps", 500, times=2)
    status, filtered = await post(session, f"{base}/filter", ARGS["filter"])
    assert (status, len(filtered["NodeNames"])) == (200, 1)
    bind = {**ARGS["bind"], "Node": filtered["NodeNames"][0]}
    assert await post(session, f"{base}/bind", bind) == (
        200,
        {"Error": "gang team-a/pair: its plan could not be written to the API yet"},
    )
    assert fake_api.objects("configmaps", "kube-rdma") == []
    # Once the apiserver takes the write, the same bind goes on to the barrier.
    second = asyncio.create_task(post(session, f"{base}/bind", bind))
    await eventually(lambda: len(fake_api.objects("configmaps", "kube-rdma")) == 1, within=30)
    second.cancel()
