"""`FakeApiServer`: the store, the watches and the REST routes put together, with a test-side
API over the same state (create/get/update/patch/delete/bind) and the controls a reflector has to
survive: compaction (410 Gone), the server ending every watch, bookmarks, injected errors, the
faults of faults.py (cut, duplicated and reordered events, slow answers), an outage (refused
connections or 503) and CRDs installed or removed while it runs (seen through discovery)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client

from kube_rdma.core.objects import Json
from testbed.fakeapi.discovery import add_discovery_routes
from testbed.fakeapi.errors import ApiError
from testbed.fakeapi.evictions import Termination
from testbed.fakeapi.faults import Faults, StreamFault
from testbed.fakeapi.kubeconfig import write_kubeconfig
from testbed.fakeapi.logs import PodLogs
from testbed.fakeapi.patches import MERGE_PATCH
from testbed.fakeapi.portforward import PortForwards
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
        self.faults = Faults()
        self.termination = Termination()
        """How long an evicted pod stays Terminating (testbed/fakeapi/evictions.py)."""
        self._watches = Watches(bookmark_interval, self.faults)
        self._store = Store(resources, clock=clock, seed=seed, on_change=self._watches.publish)
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._address: tuple[str, int] = ("127.0.0.1", 0)
        self._refusing = False
        self.logs = PodLogs()
        """What pods printed, served on pods/NAME/log (the test plays the kubelet)."""
        self.port_forwards = PortForwards()
        """The local port standing for each pod's port, for pods/NAME/portforward."""

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Listen on `host`:`port` (0: any free port); `host` is then the base URL."""
        self._runner = web.AppRunner(self.create_app(), access_log=None, shutdown_timeout=1)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, host, port)
        await self._site.start()
        self._address = (host, self._runner.addresses[0][1])
        self.host = f"http://{_reachable(host)}:{self._address[1]}"

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
        app = create_app(
            self._store,
            self._watches,
            self._recorder,
            self.logs,
            self.termination,
            self.port_forwards,
        )
        app.middlewares.append(self.faults.middleware)
        add_discovery_routes(app)
        return app

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

    def restore_owned(self, objects: Iterable[tuple[str, Json]]) -> None:
        """`restore` for objects handed over (nothing else refers to them): not copied, so a
        snapshot of a million pods loads in minutes."""
        for plural, obj in objects:
            self._store.restore_owned(plural, obj)

    def get(self, plural: str, name: str, namespace: str | None = None) -> Json:
        return self._store.get(plural, name, namespace)

    def objects(self, plural: str, namespace: str | None = None) -> list[Json]:
        """The stored objects of `plural` (in `namespace` when given), sorted as etcd keys are."""
        return self._store.select(Selector(plural, namespace))

    def count(self, plural: str) -> int:
        """How many objects of `plural` are stored, without copying them as `objects` does."""
        return self._store.count(plural)

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

    def expire_watches(self) -> None:
        """Compact, and end every open watch with a 410 ERROR event, as the watch cache does to
        a watcher that fell too far behind."""
        self._store.compact()
        expired = ApiError(410, f"too old resource version: {self._store.version}")
        self._watches.expire_all(expired.status())

    def inject(self, fault: StreamFault, plural: str | None = None, times: int = 1) -> None:
        """Apply `fault` to the next `times` events sent on watches of `plural` (any: None)."""
        self.faults.inject(fault, plural, times)

    def install(self, key: str, resource: Resource) -> None:
        """Serve `resource` from now on, as installing its CRD does."""
        self._store.resources[key] = resource

    def uninstall(self, key: str) -> None:
        """Stop serving a resource (its objects are kept, unreachable), as deleting a CRD."""
        del self._store.resources[key]

    async def go_down(self, *, refuse: bool = True) -> None:
        """Become unreachable: every open connection closed, then new ones refused (`refuse`)
        or answered 503. The test-side API keeps working, so the state can change meanwhile."""
        self.faults.unavailable = not refuse
        self._watches.cut_all()
        if refuse and not self._refusing and self._site is not None:
            self._refusing = True
            await self._site.stop()
            server = self._runner.server if self._runner is not None else None
            for connection in server.connections if server is not None else []:
                connection.force_close()

    async def come_back(self) -> None:
        """Answer again, on the same address, after `go_down`."""
        self.faults.unavailable = False
        if self._refusing and self._runner is not None:
            self._refusing = False
            self._site = web.TCPSite(self._runner, *self._address)
            await self._site.start()

    async def outage(self, seconds: float, *, refuse: bool = True) -> None:
        """Down for `seconds`, then back."""
        await self.go_down(refuse=refuse)
        await asyncio.sleep(seconds)
        await self.come_back()

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
