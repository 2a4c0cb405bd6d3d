"""An extender that records every call and answers as a test tells it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from kube_rdma.core.objects import Json
from testbed.fakeapi import FakeApiServer


class StubExtender:
    """Records every call; passes the nodes `passing` keeps, scores as `scores` says, binds
    through the fake apiserver unless `bind_error` is set (once `hold` is set, when given),
    answers `status[verb]` when set."""

    def __init__(self, api: FakeApiServer) -> None:
        self.api = api
        self.calls: list[tuple[str, Json]] = []
        self.passing: Callable[[list[str]], list[str]] = list
        self.scores: dict[str, int] = {}
        self.status: dict[str, int] = {}
        self.bind_error = ""
        self.delay = 0.0
        self.hold: asyncio.Event | None = None

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{verb}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        verb, body = request.match_info["verb"], orjson.loads(await request.read())
        self.calls.append((verb, body))
        await asyncio.sleep(self.delay)
        if verb in self.status:
            return web.Response(status=self.status[verb], text="no")
        if verb == "filter":
            answer: Any = {"NodeNames": self.passing(body["NodeNames"]), "Error": ""}
        elif verb == "prioritize":
            answer = [{"Host": n, "Score": self.scores.get(n, 0)} for n in body["NodeNames"]]
        else:
            if self.hold is not None:
                await self.hold.wait()
            answer = {"Error": self.bind_error}
            if not self.bind_error:
                binding = {"metadata": {"name": body["PodName"]}, "target": {"name": body["Node"]}}
                self.api.bind(body["PodNamespace"], binding)
        return web.json_response(answer)
