"""An in-memory Kubernetes API server that speaks the real REST wire protocol, for tests.

kopf tests its list, watch and patch code against an HTTP-level fake of the API instead of mocking
the client: kubernetes-asyncio's generated clients then run unchanged, with their URL building,
query encoding, content-type choice and streaming. This fake serves core/v1 (and whatever else is
added to its resource table) from memory, with one resourceVersion counter bumped by every write,
an event history so that watches resume from a resourceVersion, bookmarks, and the test controls a
reflector has to survive: compaction (410 Gone), the server ending every watch (an apiserver
restart) and injected HTTP errors. Every request is recorded so tests can assert exact bodies.

Where it simplifies, a test could tell it from a real apiserver:
- a strategic merge patch is applied as a JSON merge patch: lists are replaced, not merged by their
  patch merge key, and `$patch`-style directives are refused with 400;
- lists ignore `resourceVersion`, `limit` and `continue` and always serve the latest state;
- a watch from resourceVersion "0" or "" starts, like the real one, with a synthetic ADDED event per
  existing object; one from a version newer than the latest is not held back;
- label selectors are equality-based only (`a=b`, `a==b`, `a!=b`, `a`, `!a`); field selectors take
  any dotted path with `=`, `==` or `!=`, a missing field reading as "";
- the `status` subresource reads and writes the whole object; no defaulting, validation,
  admission (a namespace need not exist), finalizers or graceful deletion.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import random
import uuid
from asyncio import sleep
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import jsonpatch
import orjson
import pytest
from aiohttp import typedefs, web
from kubernetes_asyncio import client

from kube_rdma.core.objects import Json

MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
DEFAULT_WATCH_SECONDS: Final = 1800.0
TRUE: Final = frozenset({"1", "t", "T", "true", "True", "TRUE"})  # Go's strconv.ParseBool
NO_RESOURCE: Final = "the server could not find the requested resource"
NAMESPACE_MISMATCH: Final = (
    "the namespace of the provided object does not match the namespace sent on the request"
)
MODIFIED: Final = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
BOUND: Final[Json] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Success",
    "code": 201,
}
BODY: Final = web.RequestKey("body", object)
REASONS: Final[Mapping[int, str]] = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


@dataclass(frozen=True)
class Resource:
    """One REST collection: the kind it holds, its scope and its group/version."""

    kind: str
    namespaced: bool
    api_version: str = "v1"

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


RESOURCES: Final[Mapping[str, Resource]] = {
    "namespaces": Resource("Namespace", namespaced=False),
    "nodes": Resource("Node", namespaced=False),
    "pods": Resource("Pod", namespaced=True),
}


class ApiError(Exception):
    """A failed call, answered with a `Status` body as the apiserver does."""

    def __init__(
        self, code: int, message: str, reason: str = "", *, name: str = "", plural: str = ""
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.name, self.plural = code, message, name, plural
        self.reason = reason or REASONS.get(code, "Unknown")

    def status(self) -> Json:
        body: Json = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        body |= {"message": self.message, "reason": self.reason, "code": self.code}
        if self.name:
            body["details"] = {"name": self.name, "kind": self.plural}
        return body


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


@dataclass(frozen=True)
class Requirement:
    """One term of a selector: `op` is "=", "!=", "exists" or "!exists"."""

    key: str
    op: str
    value: str = ""

    def holds(self, value: str | None) -> bool:
        if self.op in ("exists", "!exists"):
            return (value is not None) == (self.op == "exists")
        return (value == self.value) == (self.op == "=")


def parse_selector(text: str) -> tuple[Requirement, ...]:
    terms = [t.strip() for t in text.split(",") if t.strip()]
    if any("(" in t or " in " in t or " notin " in t for t in terms):
        raise ApiError(400, f"fake apiserver: set-based selector {text!r} is not supported")
    return tuple(map(_requirement, terms))


def _requirement(term: str) -> Requirement:
    for op in ("!=", "==", "="):
        key, found, value = term.partition(op)
        if found:
            return Requirement(key.strip(), "!=" if op == "!=" else "=", value.strip())
    if term.startswith("!"):
        return Requirement(term[1:].strip(), "!exists")
    return Requirement(term, "exists")


@dataclass(frozen=True)
class Selector:
    """The objects a list or watch asks for."""

    plural: str
    namespace: str | None = None
    labels: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, obj: Json) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        labels = meta.get("labels") or {}
        return all(r.holds(labels.get(r.key)) for r in self.labels) and all(
            r.holds(_field(obj, r.key)) for r in self.fields
        )


def _field(obj: Json, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Change:
    """One write, kept so that a watch can start from an older resourceVersion."""

    version: int
    plural: str
    type: str
    obj: Json
    old: Json | None = None

    def event_for(self, selector: Selector) -> Json | None:
        """The event a watch with `selector` sees, following the cacher: an object that stops
        matching is DELETED (its old state at the new version), one that starts matching ADDED."""
        if self.plural != selector.plural:
            return None
        now = selector.matches(self.obj)
        before = self.old is not None and selector.matches(self.old)
        if self.type == "MODIFIED" and before and not now:
            old = copy.deepcopy(self.old or {})
            old["metadata"]["resourceVersion"] = str(self.version)
            return _event("DELETED", old)
        if self.type == "MODIFIED" and now and not before:
            return _event("ADDED", self.obj)
        return _event(self.type, self.obj) if now else None


def _event(kind: str, obj: Json) -> Json:
    return {"type": kind, "object": obj}


@dataclass(eq=False)
class Watcher:
    """An open watch stream: events reach it through the queue, None ends it."""

    selector: Selector
    bookmarks: bool
    transport: asyncio.BaseTransport | None
    queue: asyncio.Queue[Json | None] = field(default_factory=asyncio.Queue)

    def connected(self) -> bool:
        return self.transport is not None and not self.transport.is_closing()


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


class FakeApiServer:
    """The fake apiserver: a test-side API (create/get/update/patch/delete and the controls) and
    an aiohttp app serving the same state over HTTP at `host` once started."""

    def __init__(
        self,
        resources: Mapping[str, Resource] = RESOURCES,
        *,
        bookmark_interval: float | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        seed: int = 0,
    ) -> None:
        self.resources = dict(resources)
        self.bookmark_interval = bookmark_interval
        self.requests: list[RecordedRequest] = []
        self.host = ""
        self._clock = clock
        self._random = random.Random(seed)
        self._objects: dict[tuple[str, str, str], Json] = {}
        self._history: list[Change] = []
        self._version = 100
        self._compacted = 0
        self._watchers: set[Watcher] = set()
        self._failures: list[Failure] = []
        self._runner: web.AppRunner | None = None

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        self._runner = web.AppRunner(self.create_app(), access_log=None, shutdown_timeout=1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.host = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def stop(self) -> None:
        self.end_watches()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def api_client(self) -> Any:
        """A kubernetes-asyncio ApiClient for this server; use it as `async with`."""
        configuration = client.Configuration()
        configuration.host = self.host
        return client.ApiClient(configuration)

    # --- test-side API -------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The latest resourceVersion."""
        return self._version

    @property
    def watching(self) -> int:
        """How many watch streams are open with their client still connected."""
        return sum(watcher.connected() for watcher in self._watchers)

    def create(self, plural: str, obj: Json, namespace: str | None = None) -> Json:
        resource = self._resource(plural)
        body = copy.deepcopy(obj)
        meta = body.setdefault("metadata", {})
        if resource.namespaced:
            namespace = namespace or meta.get("namespace") or "default"
            if meta.setdefault("namespace", namespace) != namespace:
                raise ApiError(400, NAMESPACE_MISMATCH)
        else:
            meta.pop("namespace", None)
        meta["name"] = meta.get("name") or self._generate_name(meta.get("generateName"))
        if self._key(plural, meta.get("namespace"), meta["name"]) in self._objects:
            message = f'{self._qualified(plural)} "{meta["name"]}" already exists'
            raise ApiError(409, message, "AlreadyExists", name=meta["name"], plural=plural)
        meta["uid"] = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
        meta["creationTimestamp"] = self._timestamp()
        return self._commit(plural, "ADDED", body)

    def get(self, plural: str, name: str, namespace: str | None = None) -> Json:
        return copy.deepcopy(self._stored(plural, name, namespace))

    def objects(self, plural: str, namespace: str | None = None) -> list[Json]:
        """The stored objects of `plural` (in `namespace` when given), sorted as etcd keys are."""
        return copy.deepcopy(self._select(Selector(plural, namespace)))

    def update(self, plural: str, obj: Json, namespace: str | None = None) -> Json:
        """Replace an object (PUT): a resourceVersion in `obj` must be the stored one."""
        meta = obj.get("metadata") or {}
        name = str(meta.get("name"))
        current = self._stored(plural, name, namespace or meta.get("namespace"))
        body = copy.deepcopy(obj)
        body_meta = body.setdefault("metadata", {})
        stored_version = current["metadata"]["resourceVersion"]
        if body_meta.get("resourceVersion") not in (None, "", stored_version):
            raise _conflict(self._qualified(plural), name, MODIFIED, plural)
        for immutable in ("name", "namespace", "uid", "creationTimestamp"):
            if immutable in current["metadata"]:
                body_meta[immutable] = current["metadata"][immutable]
        return self._commit(plural, "MODIFIED", body, current)

    def patch(
        self,
        plural: str,
        name: str,
        patch: Any,
        content_type: str = MERGE_PATCH,
        namespace: str | None = None,
    ) -> Json:
        current = self._stored(plural, name, namespace)
        patched = apply_patch(current, patch, content_type)
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise ApiError(422, "fake apiserver: the patch removed the object's metadata")
        _check_name(patched, name)
        return self.update(plural, patched, namespace)

    def delete(self, plural: str, name: str, namespace: str | None = None) -> Json:
        current = self._stored(plural, name, namespace)
        return self._commit(plural, "DELETED", copy.deepcopy(current))

    def bind(self, namespace: str, binding: Json) -> Json:
        """Apply a v1 Binding as the pods/binding subresource does; the Success Status."""
        name = str((binding.get("metadata") or {}).get("name"))
        pod = self._stored("pods", name, namespace)
        target = str((binding.get("target") or {}).get("name") or "")
        uid = (binding.get("metadata") or {}).get("uid")
        if not target:
            raise ApiError(422, f'Binding "{name}" is invalid: target.name: Required value')
        if uid and uid != pod["metadata"]["uid"]:
            why = f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            raise ApiError(409, why + pod["metadata"]["uid"], name=name, plural="pods")
        if assigned := pod.get("spec", {}).get("nodeName"):
            why = f'pod {name} is already assigned to node "{assigned}"'
            raise _conflict("pods/binding", name, why, "pods")
        self._commit("pods", "MODIFIED", self._bound(pod, binding, target), pod)
        return copy.deepcopy(BOUND)

    def _bound(self, pod: Json, binding: Json, node: str) -> Json:
        """The pod on `node` with the binding's annotations and PodScheduled=True, as
        pkg/registry/core/pod/storage's setPodHostAndAnnotations leaves it."""
        bound = copy.deepcopy(pod)
        bound.setdefault("spec", {})["nodeName"] = node
        if annotations := (binding.get("metadata") or {}).get("annotations"):
            bound["metadata"].setdefault("annotations", {}).update(annotations)
        conditions = bound.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
        scheduled = {"type": "PodScheduled", "status": "True"}
        conditions.append(scheduled | {"lastTransitionTime": self._timestamp()})
        return bound

    # --- test controls -------------------------------------------------------------------------

    def bookmark(self) -> None:
        """Send a BOOKMARK at the latest resourceVersion to every watch that allows them."""
        for watcher in self._watchers:
            if watcher.bookmarks:
                watcher.queue.put_nowait(self._bookmark(watcher.selector.plural))

    def compact(self) -> None:
        """Forget the event history: a watch from an older resourceVersion gets 410 Expired."""
        self._history.clear()
        self._compacted = self._version

    def end_watches(self) -> None:
        """End every open watch stream, as an apiserver restart or a watch timeout does."""
        for watcher in self._watchers:
            watcher.queue.put_nowait(None)
        self._watchers.clear()

    def fail(
        self, method: str, path: str, code: int = 500, *, times: int = 1, watch: bool | None = None
    ) -> None:
        """Answer the next `times` requests for `method path` with `code` and a Status body;
        `watch` restricts that to watches (True) or to everything else (False)."""
        self._failures.append(Failure(method.upper(), path, code, times, watch))

    # --- store ---------------------------------------------------------------------------------

    def _resource(self, plural: str) -> Resource:
        if plural not in self.resources:
            raise ApiError(404, NO_RESOURCE)
        return self.resources[plural]

    def _key(self, plural: str, namespace: str | None, name: str) -> tuple[str, str, str]:
        scope = namespace or "" if self._resource(plural).namespaced else ""
        return plural, scope, name

    def _qualified(self, plural: str) -> str:
        group = self._resource(plural).group
        return f"{plural}.{group}" if group else plural

    def _stored(self, plural: str, name: str, namespace: str | None) -> Json:
        namespace = namespace or ("default" if self._resource(plural).namespaced else None)
        found = self._objects.get(self._key(plural, namespace, name))
        if found is None:
            message = f'{self._qualified(plural)} "{name}" not found'
            raise ApiError(404, message, name=name, plural=plural)
        return found

    def _select(self, selector: Selector) -> list[Json]:
        keys = sorted(k for k in self._objects if k[0] == selector.plural)
        return [o for o in map(self._objects.__getitem__, keys) if selector.matches(o)]

    def _generate_name(self, prefix: str | None) -> str:
        if not prefix:
            raise ApiError(422, "metadata.name: Required value: name or generateName is required")
        for _ in range(100):
            name = prefix + "".join(self._random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
            if not any(key[2] == name for key in self._objects):
                return name
        raise ApiError(409, f"fake apiserver: no free name for generateName {prefix!r}")

    def _timestamp(self) -> str:
        return self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")

    def _commit(self, plural: str, kind: str, obj: Json, old: Json | None = None) -> Json:
        """Store a write under a new resourceVersion and tell the watches that see it."""
        resource = self._resource(plural)
        self._version += 1
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        obj["metadata"]["resourceVersion"] = str(self._version)
        key = self._key(plural, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if kind == "DELETED":
            del self._objects[key]
        else:
            self._objects[key] = obj
        change = Change(self._version, plural, kind, copy.deepcopy(obj), old)
        self._history.append(change)
        for watcher in self._watchers:
            if (event := change.event_for(watcher.selector)) is not None:
                watcher.queue.put_nowait(event)
        return copy.deepcopy(obj)

    def _bookmark(self, plural: str) -> Json:
        resource = self._resource(plural)
        obj = {"kind": resource.kind, "apiVersion": resource.api_version}
        return _event("BOOKMARK", obj | {"metadata": {"resourceVersion": str(self._version)}})

    def _backlog(self, selector: Selector, since: str) -> list[Json]:
        """The events a new watch starts with, or a single 410 ERROR when history is gone."""
        if since in ("", "0"):
            return [_event("ADDED", o) for o in copy.deepcopy(self._select(selector))]
        version = _integer(since, "resourceVersion")
        if version < self._compacted:
            expired = ApiError(410, f"too old resource version: {version} ({self._compacted})")
            return [_event("ERROR", expired.status())]
        events = (c.event_for(selector) for c in self._history if c.version > version)
        return [e for e in events if e is not None]

    # --- HTTP ----------------------------------------------------------------------------------

    def create_app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.router.add_route("*", "/api/{version}/{path:.*}", self._dispatch)
        app.router.add_route("*", "/apis/{group}/{version}/{path:.*}", self._dispatch)
        return app

    @web.middleware
    async def _record(self, request: web.Request, handler: typedefs.Handler) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            return _status(ApiError(400, "the request body is not JSON").status())
        content_type = request.headers.get("Content-Type")
        recorded = RecordedRequest(
            request.method, request.path, dict(request.query), content_type, body
        )
        self.requests.append(recorded)
        for failure in self._failures:
            if failure.matches(recorded):
                failure.times -= 1
                self._failures = [f for f in self._failures if f.times > 0]
                return _status(ApiError(failure.code, "fake apiserver: injected failure").status())
        request[BODY] = body
        try:
            return await handler(request)
        except ApiError as e:
            return _status(e.status())

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        plural, namespace, name, subresource = self._route(request)
        method, body = request.method, request[BODY]
        if plural == "bindings" or subresource == "binding":
            if method != "POST" or namespace is None:
                raise ApiError(405, f"fake apiserver: {method} is not supported on bindings")
            return _json(self.bind(namespace, _named(body, name)), 201)
        if subresource not in (None, "status"):
            raise ApiError(404, NO_RESOURCE)
        if name is None and method == "GET":
            selector = _selector(plural, namespace, request.query)
            if request.query.get("watch") in TRUE:
                return await self._watch(request, selector)
            return _json(self._list(selector))
        if name is None and method == "POST":
            return _json(self.create(plural, _object(body), namespace), 201)
        if name is not None and method == "GET":
            return _json(self.get(plural, name, namespace))
        if name is not None and method == "PUT":
            obj = _object(body)
            _check_name(obj, name, missing_ok=True)
            return _json(self.update(plural, _named(obj, name), namespace))
        if name is not None and method == "PATCH":
            return _json(self.patch(plural, name, body, request.content_type, namespace))
        if name is not None and method == "DELETE":
            return _json(self.delete(plural, name, namespace))
        raise ApiError(405, f"fake apiserver: {method} is not supported on {request.path}")

    def _route(self, request: web.Request) -> tuple[str, str | None, str | None, str | None]:
        """plural, namespace, name and subresource from /api/v1/... or /apis/group/version/..."""
        info = request.match_info
        api_version = f"{info['group']}/{info['version']}" if "group" in info else info["version"]
        parts = info["path"].strip("/").split("/")
        namespace = None
        if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] != "status":
            namespace, parts = parts[1], parts[2:]
        plural, name, subresource = [*parts, None, None][:3]
        if parts == ["bindings"] and namespace is not None:
            return "bindings", namespace, None, None
        resource = self.resources.get(str(plural))
        found = len(parts) <= 3 and resource is not None and resource.api_version == api_version
        if not found or resource is None or (namespace is not None) > resource.namespaced:
            raise ApiError(404, NO_RESOURCE)
        if resource.namespaced and name is not None and namespace is None:
            raise ApiError(404, NO_RESOURCE)
        return str(plural), namespace, name, subresource

    def _list(self, selector: Selector) -> Json:
        resource = self._resource(selector.plural)
        return {
            "kind": f"{resource.kind}List",
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": str(self._version)},
            "items": self._select(selector),
        }

    async def _watch(self, request: web.Request, selector: Selector) -> web.StreamResponse:
        query = request.query
        timeout = float(_integer(query.get("timeoutSeconds", "0"), "timeoutSeconds"))
        watcher = Watcher(selector, query.get("allowWatchBookmarks") in TRUE, request.transport)
        backlog = self._backlog(selector, query.get("resourceVersion", ""))
        expired = any(event["type"] == "ERROR" for event in backlog)
        if not expired:
            self._watchers.add(watcher)  # before any await, so that no write slips between
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        deadline = asyncio.get_running_loop().time() + (timeout or DEFAULT_WATCH_SECONDS)
        try:
            for event in backlog:
                await response.write(orjson.dumps(event) + b"\n")
            while not expired and (change := await self._next(watcher, deadline)) is not None:
                await response.write(orjson.dumps(change) + b"\n")
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away, as a reflector being stopped does
        finally:
            self._watchers.discard(watcher)
        return response

    async def _next(self, watcher: Watcher, deadline: float) -> Json | None:
        """The watcher's next event, a periodic BOOKMARK, or None at the deadline or the end."""
        loop = asyncio.get_running_loop()
        while (remaining := deadline - loop.time()) > 0:
            wait = min(remaining, self.bookmark_interval or remaining)
            try:
                return await asyncio.wait_for(watcher.queue.get(), wait)
            except TimeoutError:
                if watcher.bookmarks and wait < remaining:
                    return self._bookmark(watcher.selector.plural)
        return None


def apply_patch(obj: Json, patch: Any, content_type: str) -> Any:
    """`obj` patched as the content type says; `obj` itself is left alone."""
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError(400, "a JSON patch must be a list of operations")
        try:
            return jsonpatch.apply_patch(obj, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
            raise ApiError(422, f"the JSON patch does not apply: {e}") from e
    if content_type in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        if not isinstance(patch, dict):
            raise ApiError(400, "a merge patch must be a JSON object")
        return merge_patch(obj, patch, strategic=content_type == STRATEGIC_MERGE_PATCH)
    raise ApiError(415, f"the body of the request was in an unknown format: {content_type}")


def merge_patch(target: Any, patch: Any, *, strategic: bool = False) -> Any:
    """RFC 7386: maps merge key by key, null deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if strategic and key.startswith("$"):
            raise ApiError(400, f"fake apiserver: strategic merge directive {key} is unsupported")
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value, strategic=strategic)
    return result


def _conflict(qualified: str, name: str, why: str, plural: str) -> ApiError:
    message = f'Operation cannot be fulfilled on {qualified} "{name}": {why}'
    return ApiError(409, message, name=name, plural=plural)


def _check_name(obj: Json, name: str, *, missing_ok: bool = False) -> None:
    found = (obj.get("metadata") or {}).get("name", name if missing_ok else None)
    if found != name:
        message = f"the name of the object ({found}) does not match the name on the URL ({name})"
        raise ApiError(400, message)


def _selector(plural: str, namespace: str | None, query: Mapping[str, str]) -> Selector:
    labels = parse_selector(query.get("labelSelector", ""))
    return Selector(plural, namespace, labels, parse_selector(query.get("fieldSelector", "")))


def _integer(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ApiError(400, f"{what}: invalid value {text!r}") from None


def _object(body: Any) -> Json:
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _named(body: Any, name: str | None) -> Json:
    obj = _object(body)
    if name is not None:
        obj.setdefault("metadata", {})["name"] = name
    return obj


def _json(body: Json, code: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=code, content_type="application/json")


def _status(body: Json) -> web.Response:
    return _json(body, int(body["code"]))


async def eventually(condition: Callable[[], object], within: float = 2.0) -> None:
    """Wait until `condition()` (awaited when it returns an awaitable) is truthy, polling often."""
    try:
        async with asyncio.timeout(within):
            while True:
                if await _truthy(condition()):
                    return
                await sleep(0.002)
    except TimeoutError:
        raise AssertionError(f"condition still false after {within}s") from None


async def _truthy(result: object) -> bool:
    return bool(await result if inspect.isawaitable(result) else result)


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeApiServer]:
    """A started FakeApiServer."""
    async with FakeApiServer() as server:
        yield server


@pytest.fixture
async def core_v1(fake_api: FakeApiServer) -> AsyncIterator[Any]:
    """A kubernetes-asyncio CoreV1Api talking to `fake_api`."""
    async with fake_api.api_client() as api:
        yield client.CoreV1Api(api)
