"""List and watch one kind of Kubernetes object into a local cache, as client-go's reflector does.

It lists, then watches from the list's resourceVersion with bookmarks, resumes the watch from the
last seen resourceVersion when the server ends it, and re-lists when the server answers 410 Gone
(the version fell out of the watch cache). Objects stay raw JSON dicts: decoding into generated
model classes costs far more than the cache needs. The transport is kubernetes-asyncio's API
client with `_preload_content=False`, so auth, TLS and kubeconfig handling are its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson

from kube_rdma.core.objects import Json

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


class Gone(Exception):
    """The watch's resourceVersion is too old: re-list."""


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
    ) -> None:
        self._list_fn = list_fn
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
                    await self._back_off(f"watch closed after {time.monotonic() - started:.2f}s")
            except asyncio.CancelledError:
                raise
            except Gone:
                log.info("watch of %s expired (410 Gone); re-listing", self._what)
                self.relists += 1
            except Exception as e:
                await self._back_off(f"list/watch failed: {e}")

    async def _back_off(self, reason: str) -> None:
        log.warning("%s of %s; retrying in %.1fs", reason, self._what, self._backoff)
        await self._sleep(self._backoff)
        self._backoff = min(self._backoff * 2, self._max_backoff)

    async def _list(self) -> str:
        response = await self._list_fn(_preload_content=False)
        try:
            await _check(response)
            body = orjson.loads(await response.read())
        finally:
            response.release()
        self._on_replace(body.get("items") or [])
        self.synced.set()
        return str(body["metadata"]["resourceVersion"])

    async def _watch(self, version: str) -> tuple[str, int]:
        """Follow the watch until the server ends it: the last resourceVersion seen, and how
        many events (bookmarks included) arrived."""
        response = await self._list_fn(
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
            _preload_content=False,
            _request_timeout=WATCH_TIMEOUT_SECONDS + 30,
        )
        events = 0
        try:
            await _check(response)
            while line := await response.content.readline():
                version = self._handle(orjson.loads(line), version)
                events += 1
        finally:
            with contextlib.suppress(Exception):
                response.release()
        return version, events

    def _handle(self, event: Json, version: str) -> str:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone()
            raise RuntimeError(f"watch error: {obj.get('message') or obj}")
        new_version = (obj.get("metadata") or {}).get("resourceVersion") or version
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._on_event(str(kind), obj)
        return str(new_version)


async def _check(response: Any) -> None:
    """Raise for a non-2xx answer (kubernetes-asyncio leaves that to us without preloading)."""
    if 200 <= response.status < 300:
        return
    if response.status == 410:
        raise Gone()
    text = (await response.read())[:500].decode(errors="replace")
    raise RuntimeError(f"HTTP {response.status}: {text}")
