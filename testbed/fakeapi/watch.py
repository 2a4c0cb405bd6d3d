"""Watch streams: one newline-delimited JSON event per line over a chunked response.

A stream starts with its backlog (the store's events since the requested resourceVersion, or a
single 410 ERROR when that history was compacted, after which it ends as the apiserver's does),
then carries every write its selector sees until `timeoutSeconds`, the client leaving, or
`end_all` (what an apiserver restart looks like to a reflector). With `allowWatchBookmarks` it
also gets BOOKMARK events: on demand, and every `bookmark_interval` seconds when one is set.
What goes on the wire passes through the injected faults (faults.py): a stream may be cut in the
middle of an event, carry an event twice or out of order, or a too-old resourceVersion may be
refused with HTTP 410 instead of the ERROR event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web

from kube_rdma.core.objects import Json
from testbed.fakeapi.errors import ApiError
from testbed.fakeapi.faults import Faults, StreamFault, StreamShaper
from testbed.fakeapi.selectors import Selector
from testbed.fakeapi.store import Change, event

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

    def __init__(
        self, bookmark_interval: float | None = None, faults: Faults | None = None
    ) -> None:
        self.bookmark_interval = bookmark_interval
        self.faults = Faults() if faults is None else faults
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

    def expire_all(self, status: Json) -> None:
        """Send every stream a 410 ERROR event carrying `status`, which ends it."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(event("ERROR", status))
        self.end_all()

    def cut_all(self) -> None:
        """Close every stream's connection under it, as an apiserver that dies does."""
        for watcher in self._watchers:
            if watcher.transport is not None:
                watcher.transport.close()
        self.end_all()

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
        expired = any(e["type"] == "ERROR" for e in backlog)
        if expired and self.faults.expired_as_http:
            raise ApiError(410, backlog[0]["object"]["message"])
        if not expired:
            self._watchers.add(watcher)  # before any await, so that no write slips between
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        deadline = asyncio.get_running_loop().time() + (seconds or DEFAULT_WATCH_SECONDS)
        shaper = StreamShaper(self.faults, watcher.selector.plural)
        try:
            for past in backlog:
                if not await _send(request, response, shaper, past):
                    return response
            while not expired and (change := await self._next(watcher, deadline, bookmark)):
                if not await _send(request, response, shaper, change):
                    return response
                if change["type"] == "ERROR":
                    break  # the apiserver ends a watch after its ERROR event
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


async def _send(
    request: web.Request, response: web.StreamResponse, shaper: StreamShaper, change: Json
) -> bool:
    """Write one event as the faults shape it; False when a fault cut the stream there."""
    lines, cut = shaper.lines(change)
    for line in lines:
        await response.write(line)
    if cut is StreamFault.TRUNCATE:
        await response.write_eof()
    elif cut is StreamFault.CUT and request.transport is not None:
        request.transport.close()
    return cut is None
