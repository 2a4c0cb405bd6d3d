"""What the Reflector tests share: callbacks that record what they were told, a Reflector run
against the fake apiserver with its backoff sleeps recorded, and the calls it made."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from kube_rdma.core.objects import Json
from kube_rdma.kube.reflector import ListFunction, Reflector
from testbed.fakeapi import FakeApiServer

NAMESPACES = "/api/v1/namespaces"
NODES = "/api/v1/nodes"
INJECTED = "fake apiserver: injected failure"
# What the Reflector's watch sends, as kubernetes-asyncio encodes it.
WATCH_QUERY = {"watch": "True", "allowWatchBookmarks": "True", "timeoutSeconds": "300"}


class Recorder:
    """A cache of name -> resourceVersion fed by the callbacks, and a log of what they were told."""

    def __init__(self) -> None:
        self.versions: dict[str, str] = {}
        self.log: list[str] = []

    def replace(self, items: list[Json]) -> None:
        self.versions = {_name(o): _version(o) for o in items}
        self.log.append(" ".join(["replace", *self.versions]))

    def event(self, kind: str, obj: Json) -> None:
        if kind == "DELETED":
            del self.versions[_name(obj)]
        else:
            self.versions[_name(obj)] = _version(obj)
        self.log.append(f"{kind} {_name(obj)} {_version(obj)}")


def _name(obj: Json) -> str:
    return str(obj["metadata"]["name"])


def _version(obj: Json) -> str:
    return str(obj["metadata"]["resourceVersion"])


def named(name: str, **labels: str) -> Json:
    return {"metadata": {"name": name, "labels": labels}}


@contextlib.asynccontextmanager
async def running(
    list_fn: ListFunction,
    recorder: Recorder,
    delays: list[float] | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    stale_after: float = 20.0,
) -> AsyncIterator[Reflector]:
    """Run a Reflector whose backoff sleeps are recorded in `delays` and last a moment."""
    recorded = [] if delays is None else delays

    async def sleep(delay: float) -> None:
        recorded.append(delay)
        await asyncio.sleep(0.001)

    reflector = Reflector(
        list_fn,
        recorder.replace,
        recorder.event,
        "test objects",
        sleep=sleep,
        clock=clock,
        stale_after=stale_after,
    )
    task = asyncio.create_task(reflector.run())
    try:
        yield reflector
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def calls(api: FakeApiServer, path: str) -> list[str]:
    """The list and watch calls on `path`, in order: "list", or "watch@<resourceVersion>"."""
    return [
        f"watch@{r.query.get('resourceVersion', '')}" if r.watch else "list"
        for r in api.requests
        if r.path == path
    ]
