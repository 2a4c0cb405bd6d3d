"""`FakeApiServer`: the store, the watches and the REST routes put together, with a test-side
API over the same state (create/get/update/patch/delete/bind) and the controls a reflector has to
survive: compaction (410 Gone), the server ending every watch, bookmarks and injected errors."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client

from kube_rdma.core.objects import Json
from testbed.fakeapi.kubeconfig import write_kubeconfig
from testbed.fakeapi.logs import PodLogs
from testbed.fakeapi.patches import MERGE_PATCH
from testbed.fakeapi.recording import Failure, RecordedRequest, Recorder
from testbed.fakeapi.routes import create_app
from testbed.fakeapi.selectors import Selector
from testbed.fakeapi.store import RESOURCES, Resource, Store
from testbed.fakeapi.watch import Watches


class FakeApiServer:
    """The fake apiserver: a test-side API and an aiohttp app serving the same state over HTTP
    at `host` once started."""

    def __init__(
        self,
        resources: Mapping[str, Resource] = RESOURCES,
        *,
        bookmark_interval: float | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        seed: int = 0,
    ) -> None:
        self.host = ""
        self._recorder = Recorder()
        self._watches = Watches(bookmark_interval)
        self._store = Store(resources, clock=clock, seed=seed, on_change=self._watches.publish)
        self._runner: web.AppRunner | None = None
        self.logs = PodLogs()
        """What pods printed, served on pods/NAME/log (the test plays the kubelet)."""

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Listen on `host`:`port` (0: any free port); `host` is then the base URL."""
        self._runner = web.AppRunner(self.create_app(), access_log=None, shutdown_timeout=1)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        self.host = f"http://{_reachable(host)}:{self._runner.addresses[0][1]}"

    async def stop(self) -> None:
        self.end_watches()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def create_app(self) -> web.Application:
        return create_app(self._store, self._watches, self._recorder, self.logs)

    def api_client(self) -> Any:
        """A kubernetes-asyncio ApiClient for this server; use it as `async with`."""
        configuration = client.Configuration()
        configuration.host = self.host
        return client.ApiClient(configuration)

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig at `path` pointing at this (started) server."""
        return write_kubeconfig(path, self.host)

    # --- test-side API -------------------------------------------------------------------------

    @property
    def resources(self) -> dict[str, Resource]:
        return self._store.resources

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in order."""
        return self._recorder.requests

    @property
    def version(self) -> int:
        """The latest resourceVersion."""
        return self._store.version

    @property
    def watching(self) -> int:
        """How many watch streams are open with their client still connected."""
        return self._watches.connected

    def create(self, plural: str, obj: Json, namespace: str | None = None) -> Json:
        return self._store.create(plural, obj, namespace)

    def restore(self, objects: Iterable[tuple[str, Json]]) -> None:
        """Store (plural, object) pairs keeping their uids and creation times."""
        for plural, obj in objects:
            self._store.restore(plural, obj)

    def get(self, plural: str, name: str, namespace: str | None = None) -> Json:
        return self._store.get(plural, name, namespace)

    def objects(self, plural: str, namespace: str | None = None) -> list[Json]:
        """The stored objects of `plural` (in `namespace` when given), sorted as etcd keys are."""
        return self._store.select(Selector(plural, namespace))

    def update(self, plural: str, obj: Json, namespace: str | None = None) -> Json:
        """Replace an object (PUT): a resourceVersion in `obj` must be the stored one."""
        return self._store.update(plural, obj, namespace)

    def patch(
        self,
        plural: str,
        name: str,
        patch: Any,
        content_type: str = MERGE_PATCH,
        namespace: str | None = None,
    ) -> Json:
        return self._store.patch(plural, name, patch, content_type, namespace)

    def delete(self, plural: str, name: str, namespace: str | None = None) -> Json:
        return self._store.delete(plural, name, namespace)

    def bind(self, namespace: str, binding: Json) -> Json:
        """Apply a v1 Binding as the pods/binding subresource does; the Success Status."""
        return self._store.bind(namespace, binding)

    # --- test controls -------------------------------------------------------------------------

    def bookmark(self) -> None:
        """Send a BOOKMARK at the latest resourceVersion to every watch that allows them."""
        self._watches.bookmark(self._store.bookmark)

    def compact(self) -> None:
        """Forget the event history: a watch from an older resourceVersion gets 410 Expired."""
        self._store.compact()

    def end_watches(self) -> None:
        """End every open watch stream, as an apiserver restart or a watch timeout does."""
        self._watches.end_all()

    def fail(
        self, method: str, path: str, code: int = 500, *, times: int = 1, watch: bool | None = None
    ) -> None:
        """Answer the next `times` requests for `method path` with `code` and a Status body;
        `watch` restricts that to watches (True) or to everything else (False)."""
        self._recorder.fail(Failure(method.upper(), path, code, times, watch))


def _reachable(host: str) -> str:
    """The address a client on this machine dials for a server bound to `host`."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host
