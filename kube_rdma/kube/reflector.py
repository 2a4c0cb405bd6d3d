"""List and watch one kind of Kubernetes object into a local cache, as client-go's reflector does.

It lists, then watches from the list's resourceVersion with bookmarks, and keeps the cache equal
to the apiserver's truth through whatever the connection does:
- the server ends the watch, or the stream is cut (even in the middle of an event), or the watch
  request fails with no answer, a 5xx or a 429: the watch resumes from the newest version seen
  (an event, or a BOOKMARK), after a backoff unless the last watch was a healthy one, as
  client-go retries a watch on a refused connection, a 500 or a 429 without re-listing;
- 410 Gone (an ERROR event, or the watch request answered 410), or an event out of order
  (kube_rdma/kube/versions.py): re-list, which replaces the whole cache;
- duplicated events and events older than the list are ignored (versions.py says why that is
  safe); any other failed call backs off and re-lists.
`in_sync()` says whether the cache can be trusted: false until a list completes after start or
after a re-list was decided, and false once calls have failed for longer than `stale_after`.

Objects stay raw JSON dicts: decoding into generated model classes costs far more than the cache
needs. A `transform` applied to each object as it arrives, before any callback sees it, lets the
cache keep only the fields it reads (client-go's SetTransform). With a `page_size` the list comes
in pages of that many objects, following the `continue` token as client-go's pager does, so only
one page of whole objects is ever decoded at a time. A resource that may not be installed (a CRD)
is given `served`, which returns once API discovery finds it (kube_rdma/kube/discovery.py): the
reflector waits on it before each list instead of failing on 404 over and over. Every request goes
through kube_rdma/kube/client.py, so a failure arrives as a typed error naming the list or watch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson

from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call, stream
from kube_rdma.kube.errors import (
    ApiError,
    Gone,
    ServerError,
    TooManyRequests,
    Unreachable,
    error_for,
)
from kube_rdma.kube.versions import EventOrder, OutOfOrder, Verdict

log = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS = 300
INITIAL_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
# A watch the server closes sooner than this without a single event is treated as a failure, so
# a server or proxy that keeps closing watches is not hammered (client-go's "very short watch").
MIN_WATCH_SECONDS = 1.0
STALE_AFTER_SECONDS = 20.0
"""How long calls may keep failing before the cache stops counting as in sync. An apiserver
restart, or a failover behind its load balancer, takes a few seconds: the cache rides that out.
Past this bound writes may have been missed for long enough that answers from the cache would
mislead, so readiness turns false until a list or a watch gets through again."""
# The watch failures retried from the last version, without a re-list.
RETRY_WATCH = (Unreachable, ServerError, TooManyRequests)


class ListFunction(Protocol):
    """A kubernetes-asyncio `list_*` method (e.g. CoreV1Api.list_namespace)."""

    def __call__(self, **kwargs: Any) -> Awaitable[Any]: ...


class BrokenStream(ApiError):
    """A watch stream that ended in the middle of an event, or carried a line that is not JSON."""

    def __init__(self, operation: str, message: str) -> None:
        super().__init__(operation, None, "BrokenStream", message)


class Reflector:
    """Keeps `on_replace` / `on_event` callbacks fed with the objects of one list endpoint."""

    def __init__(
        self,
        list_fn: ListFunction,
        on_replace: Callable[[list[Json]], None],
        on_event: Callable[[str, Json], None],
        what: str,
        *,
        initial_backoff: float = INITIAL_BACKOFF_SECONDS,
        max_backoff: float = MAX_BACKOFF_SECONDS,
        stale_after: float = STALE_AFTER_SECONDS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        transform: Callable[[Json], Json] | None = None,
        page_size: int | None = None,
        served: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._list_fn = list_fn
        self._transform = transform
        self._page_size = page_size
        self._served = served
        self._on_replace = on_replace
        self._on_event = on_event
        self._what = what
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._stale_after = stale_after
        self._sleep = sleep
        self._clock = clock
        self._backoff = initial_backoff
        self._listing = True
        self._failing_since: float | None = None
        self.synced = asyncio.Event()
        """Set once the first list completed; stays set."""
        self.relists = 0
        self.ignored = 0
        """Duplicated events, and events the list already held."""

    def in_sync(self) -> bool:
        """The cache holds a complete list and follows the watch: no re-list is pending, and
        calls have not been failing for longer than `stale_after`."""
        if self._listing:
            return False
        failing = self._failing_since
        return failing is None or self._clock() - failing <= self._stale_after

    async def run(self) -> None:
        """List and watch until cancelled, backing off on errors."""
        while True:
            try:
                if self._served is not None:
                    await self._served()
                await self._follow(await self._list())
            except asyncio.CancelledError:
                raise
            except (Gone, OutOfOrder) as e:
                log.info("%s; re-listing", e)
                self.relists += 1
            except ApiError as e:
                await self._back_off(str(e))
            except Exception as e:
                await self._back_off(f"list/watch {self._what}: {e!r}")
            self._listing = True

    async def _follow(self, order: EventOrder) -> None:
        """Watch, resuming from the newest version after every end, until a re-list is due."""
        while True:
            started = self._clock()
            try:
                events = await self._watch(order)
            except (*RETRY_WATCH, BrokenStream) as e:
                await self._back_off(f"{e}; resuming from version {order.resume_from}")
                continue
            elapsed = self._clock() - started
            if events or elapsed >= MIN_WATCH_SECONDS:
                self._backoff = self._initial_backoff
            else:
                await self._back_off(f"watch {self._what}: closed after {elapsed:.2f}s")

    async def _back_off(self, reason: str) -> None:
        if self._failing_since is None:
            self._failing_since = self._clock()
        log.warning("%s; retrying in %.1fs", reason, self._backoff)
        await self._sleep(self._backoff)
        self._backoff = min(self._backoff * 2, self._max_backoff)

    def _answered(self) -> None:
        self._failing_since = None

    async def _list(self) -> EventOrder:
        """List, page by page when paged; an expired `continue` token answers 410 Gone, and the
        list starts over. The watch starts from the first page's version: a real apiserver
        gives every page that one, and a server whose pages are not one snapshot then replays
        the writes that came between pages, which converges on the truth."""
        items: list[Json] = []
        paging = {} if self._page_size is None else {"limit": self._page_size}
        version = None
        while True:
            body = await call(f"list {self._what}", self._list_fn, **paging)
            page: list[Json] = body.get("items") or []
            items += page if self._transform is None else map(self._transform, page)
            metadata = body["metadata"]
            version = version or str(metadata["resourceVersion"])
            if not (self._page_size and metadata.get("continue")):
                break
            paging["_continue"] = metadata["continue"]
        self._on_replace(items)
        self._listing = False
        self._answered()
        self.synced.set()
        return EventOrder(version)

    async def _watch(self, order: EventOrder) -> int:
        """Follow the watch until the server ends it: how many events (bookmarks included)
        arrived."""
        events = 0
        async with stream(
            f"watch {self._what}",
            self._list_fn,
            watch=True,
            resource_version=order.resume_from,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
            request_timeout=WATCH_TIMEOUT_SECONDS + 30,
        ) as response:
            self._answered()
            while line := await response.content.readline():
                self._handle(self._decoded(line), order)
                events += 1
        return events

    def _handle(self, event: Json, order: EventOrder) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise error_for(f"watch {self._what}", int(obj.get("code") or 0), obj)
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            order.bookmark(version)
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return
        verdict = order.judge(version)
        if verdict is Verdict.OUT_OF_ORDER:
            raise OutOfOrder(f"watch {self._what}: {kind} at version {version} out of order")
        if verdict is Verdict.STALE:
            self.ignored += 1
            return
        self._on_event(str(kind), obj if self._transform is None else self._transform(obj))

    def _decoded(self, line: bytes) -> Json:
        if not line.endswith(b"\n"):
            message = f"cut in the middle of an event ({len(line)} bytes)"
            raise BrokenStream(f"watch {self._what}", message)
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise BrokenStream(f"watch {self._what}", f"not a JSON event: {e}") from None
        if not isinstance(event, dict):
            raise BrokenStream(f"watch {self._what}", "not a JSON object")
        return event
