"""List and watch one kind of Kubernetes object into a local cache, as client-go's reflector does.

It lists, then watches from the list's resourceVersion with bookmarks, resumes the watch from the
last seen resourceVersion when the server ends it, and re-lists when the server answers 410 Gone
(the version fell out of the watch cache). Objects stay raw JSON dicts: decoding into generated
model classes costs far more than the cache needs. A `transform` applied to each object as it
arrives, before any callback sees it, lets the cache keep only the fields it reads (client-go's
SetTransform). With a `page_size` the list comes in pages of that many objects, following the
`continue` token as client-go's pager does, so only one page of whole objects is ever decoded at
a time: a cache that keeps a fraction of each object then peaks near its own size, not near the
size of the whole list. Every request goes through
kube_rdma/kube/client.py, so a failure arrives as a typed error naming the list or the watch.
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
from kube_rdma.kube.errors import ApiError, Gone, error_for

log = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS = 300
INITIAL_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
# A watch the server closes sooner than this without a single event is treated as a failure, so
# a server or proxy that keeps closing watches is not hammered (client-go's "very short watch").
MIN_WATCH_SECONDS = 1.0


class ListFunction(Protocol):
    """A kubernetes-asyncio `list_*` method (e.g. CoreV1Api.list_namespace)."""

    def __call__(self, **kwargs: Any) -> Awaitable[Any]: ...


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
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        transform: Callable[[Json], Json] | None = None,
        page_size: int | None = None,
    ) -> None:
        self._list_fn = list_fn
        self._transform = transform
        self._page_size = page_size
        self._on_replace = on_replace
        self._on_event = on_event
        self._what = what
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._sleep = sleep
        self._backoff = initial_backoff
        self.synced = asyncio.Event()
        self.relists = 0

    async def run(self) -> None:
        """List and watch until cancelled, backing off on errors."""
        while True:
            try:
                version = await self._list()
                while True:
                    started = time.monotonic()
                    version, events = await self._watch(version)
                    if events or time.monotonic() - started >= MIN_WATCH_SECONDS:
                        self._backoff = self._initial_backoff
                        continue
                    elapsed = time.monotonic() - started
                    await self._back_off(f"watch {self._what}: closed after {elapsed:.2f}s")
            except asyncio.CancelledError:
                raise
            except Gone as e:
                log.info("%s; re-listing", e)
                self.relists += 1
            except ApiError as e:
                await self._back_off(str(e))
            except Exception as e:
                await self._back_off(f"list/watch {self._what}: {e!r}")

    async def _back_off(self, reason: str) -> None:
        log.warning("%s; retrying in %.1fs", reason, self._backoff)
        await self._sleep(self._backoff)
        self._backoff = min(self._backoff * 2, self._max_backoff)

    async def _list(self) -> str:
        """List, page by page when paged; an expired `continue` token answers 410 Gone, and the
        list starts over."""
        items: list[Json] = []
        paging = {} if self._page_size is None else {"limit": self._page_size}
        while True:
            body = await call(f"list {self._what}", self._list_fn, **paging)
            page: list[Json] = body.get("items") or []
            items += page if self._transform is None else map(self._transform, page)
            metadata = body["metadata"]
            if not (self._page_size and metadata.get("continue")):
                break
            paging["_continue"] = metadata["continue"]
        self._on_replace(items)
        self.synced.set()
        return str(metadata["resourceVersion"])

    async def _watch(self, version: str) -> tuple[str, int]:
        """Follow the watch until the server ends it: the last resourceVersion seen, and how
        many events (bookmarks included) arrived."""
        events = 0
        async with stream(
            f"watch {self._what}",
            self._list_fn,
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
            request_timeout=WATCH_TIMEOUT_SECONDS + 30,
        ) as response:
            while line := await response.content.readline():
                version = self._handle(orjson.loads(line), version)
                events += 1
        return version, events

    def _handle(self, event: Json, version: str) -> str:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise error_for(f"watch {self._what}", int(obj.get("code") or 0), obj)
        new_version = (obj.get("metadata") or {}).get("resourceVersion") or version
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._on_event(str(kind), obj if self._transform is None else self._transform(obj))
        return str(new_version)
