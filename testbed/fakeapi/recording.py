"""Every request as the fake apiserver received it, and errors injected on chosen requests.

Tests assert exact request bodies (the patch a component sent, the query of its watch) from the
recording, and make the next N calls to a path fail to exercise retries and backoff. Both sit in
one aiohttp middleware, in front of the routes, so that an injected failure is recorded too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson
from aiohttp import typedefs, web

from testbed.fakeapi.errors import ApiError, error_response

TRUE: Final = frozenset({"1", "t", "T", "true", "True", "TRUE"})  # Go's strconv.ParseBool
BODY: Final = web.RequestKey("body", object)
"""The parsed JSON body (None when empty), for the routes."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it; `body` is the parsed JSON, None when empty."""

    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    body: Any

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in TRUE


@dataclass
class Failure:
    """An injected error for the next `times` requests matching method, path (and watch)."""

    method: str
    path: str
    code: int
    times: int
    watch: bool | None

    def matches(self, request: RecordedRequest) -> bool:
        same = request.method == self.method and request.path == self.path
        return same and self.watch in (None, request.watch)


class Recorder:
    """The recorded requests (`requests`, in arrival order) and the pending failures."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._failures: list[Failure] = []

    def fail(self, failure: Failure) -> None:
        self._failures.append(failure)

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: typedefs.Handler
    ) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            return error_response(ApiError(400, "the request body is not JSON"))
        content_type = request.headers.get("Content-Type")
        recorded = RecordedRequest(
            request.method, request.path, dict(request.query), content_type, body
        )
        self.requests.append(recorded)
        if (failure := self._take_failure(recorded)) is not None:
            return error_response(ApiError(failure.code, "fake apiserver: injected failure"))
        request[BODY] = body
        try:
            return await handler(request)
        except ApiError as e:
            return error_response(e)

    def _take_failure(self, request: RecordedRequest) -> Failure | None:
        for failure in self._failures:
            if failure.matches(request):
                failure.times -= 1
                self._failures = [f for f in self._failures if f.times > 0]
                return failure
        return None
