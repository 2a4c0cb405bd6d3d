"""An extender with a preemptVerb, answering as a test tells it: what kube-scheduler's
preemption does with its answers is what the tests check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from kube_rdma.core.objects import Json
from testbed.fakeapi import FakeApiServer

Answer = Callable[[Json], Any]
"""The request's NodeNameToMetaVictims -> the answer's NodeNameToMetaVictims."""


class PreemptingExtender:
    """Filters by `failed` (node -> reason) and `unresolvable`, binds through the fake
    apiserver, answers /preempt with `answer` (or `status` when set); records every body."""

    def __init__(self, api: FakeApiServer) -> None:
        self.api = api
        self.calls: list[tuple[str, Json]] = []
        self.failed: dict[str, str] = {}
        self.unresolvable: dict[str, str] = {}
        self.answer: Answer = lambda victims: victims
        self.status: int | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{verb}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        verb, body = request.match_info["verb"], orjson.loads(await request.read())
        self.calls.append((verb, body))
        if verb == "preempt":
            if self.status is not None:
                return web.Response(status=self.status, text="no")
            answer = self.answer(body["NodeNameToMetaVictims"])
            return web.json_response({"NodeNameToMetaVictims": answer})
        if verb == "filter":
            names = body["NodeNames"]
            refused = self.failed | self.unresolvable
            return web.json_response({
                "NodeNames": [n for n in names if n not in refused],
                "FailedNodes": {n: r for n, r in self.failed.items() if n in names},
                "FailedAndUnresolvableNodes": {
                    n: r for n, r in self.unresolvable.items() if n in names
                },
                "Error": "",
            })  # fmt: skip
        if verb == "prioritize":
            return web.json_response([{"Host": n, "Score": 0} for n in body["NodeNames"]])
        binding = {"metadata": {"name": body["PodName"]}, "target": {"name": body["Node"]}}
        self.api.bind(body["PodNamespace"], binding)
        return web.json_response({"Error": ""})
