"""Watch streams: one newline-delimited JSON event per line over a chunked response.

A stream starts with its backlog (the store's events since the requested resourceVersion, or a
single 410 ERROR when that history was compacted, after which it ends as the apiserver's does),
then carries every write its selector sees until `timeoutSeconds`, the client leaving, or
`end_all` (what an apiserver restart looks like to a reflector). With `allowWatchBookmarks` it
also gets BOOKMARK events: on demand, and every `bookmark_interval` seconds when one is set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import orjson
from aiohttp import web

from kube_rdma.core.objects import Json
from testbed.fakeapi.selectors import Selector
from testbed.fakeapi.store import Change

DEFAULT_WATCH_SECONDS: Final = 1800.0


@dataclass(eq=False)
class Watcher:
    """An open watch stream: events reach it through the queue, None ends it."""

    selector: Selector
    bookmarks: bool
    transport: asyncio.BaseTransport | None
    queue: asyncio.Queue[Json | None] = field(default_factory=asyncio.Queue)

    def connected(self) -> bool:
        return self.transport is not None and not self.transport.is_closing()


class Watches:
    """The open watch streams, fed with every write."""

    def __init__(self, bookmark_interval: float | None = None) -> None:
        self.bookmark_interval = bookmark_interval
        self._watchers: set[Watcher] = set()

    @property
    def connected(self) -> int:
        """How many streams are open with their client still connected."""
        return sum(watcher.connected() for watcher in self._watchers)

    def publish(self, change: Change) -> None:
        for watcher in self._watchers:
            if (event := change.event_for(watcher.selector)) is not None:
                watcher.queue.put_nowait(event)

    def bookmark(self, bookmark: Callable[[str], Json]) -> None:
        """Send `bookmark(plural)` to every stream that allows bookmarks."""
        for watcher in self._watchers:
            if watcher.bookmarks:
                watcher.queue.put_nowait(bookmark(watcher.selector.plural))

    def end_all(self) -> None:
        for watcher in self._watchers:
            watcher.queue.put_nowait(None)
        self._watchers.clear()

    async def stream(
        self,
        request: web.Request,
        watcher: Watcher,
        backlog: list[Json],
        seconds: float,
        bookmark: Callable[[str], Json],
    ) -> web.StreamResponse:
        """Serve one watch: `backlog`, then the watcher's events until it ends or `seconds`
        (0: the default) pass."""
        expired = any(event["type"] == "ERROR" for event in backlog)
        if not expired:
            self._watchers.add(watcher)  # before any await, so that no write slips between
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        deadline = asyncio.get_running_loop().time() + (seconds or DEFAULT_WATCH_SECONDS)
        try:
            for event in backlog:
                await response.write(orjson.dumps(event) + b"\n")
            while not expired and (change := await self._next(watcher, deadline, bookmark)):
                await response.write(orjson.dumps(change) + b"\n")
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away, as a reflector being stopped does
        finally:
            self._watchers.discard(watcher)
        return response

    async def _next(
        self, watcher: Watcher, deadline: float, bookmark: Callable[[str], Json]
    ) -> Json | None:
        """The watcher's next event, a periodic BOOKMARK, or None at the deadline or the end."""
        loop = asyncio.get_running_loop()
        while (remaining := deadline - loop.time()) > 0:
            wait = min(remaining, self.bookmark_interval or remaining)
            try:
                return await asyncio.wait_for(watcher.queue.get(), wait)
            except TimeoutError:
                if watcher.bookmarks and wait < remaining:
                    return bookmark(watcher.selector.plural)
        return None
