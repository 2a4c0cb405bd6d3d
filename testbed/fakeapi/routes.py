"""The REST routes: /api/v1/... and /apis/GROUP/VERSION/..., for every resource of the store.

The verbs are the apiserver's: GET on a collection lists (or watches, with `watch=true`), POST
creates, GET/PUT/PATCH/DELETE on a name read, replace, patch and delete, and the `status`
subresource reads and writes the whole object. A Binding is accepted on pods/NAME/binding and on
namespaces/NS/bindings; pods/NAME/log and pods/NAME/portforward are served as in logs.py and
portforward.py. Lists ignore `resourceVersion` and always serve the latest state; `limit`
pages them, the `continue` token being the offset of the next page (so, unlike the apiserver's,
pages are not one consistent snapshot when writes come between them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web

from kube_rdma.core.objects import Json
from testbed.fakeapi.errors import NO_RESOURCE, ApiError, integer, json_response
from testbed.fakeapi.evictions import Termination, evict
from testbed.fakeapi.logs import LOGS, PodLogs, serve_log
from testbed.fakeapi.portforward import PORT_FORWARDS, PortForwards, serve_port_forward
from testbed.fakeapi.recording import BODY, TRUE, Recorder
from testbed.fakeapi.selectors import Selector
from testbed.fakeapi.store import Store, check_name
from testbed.fakeapi.watch import Watcher, Watches

STORE: Final = web.AppKey("store", Store)
TERMINATION: Final = web.AppKey("termination", Termination)
WATCHES: Final = web.AppKey("watches", Watches)


@dataclass(frozen=True)
class Target:
    """What a URL names: a collection (name None), an object, or one of its subresources."""

    plural: str
    """The key of the resource table."""
    namespace: str | None
    name: str | None
    subresource: str | None


def create_app(
    store: Store,
    watches: Watches,
    recorder: Recorder,
    logs: PodLogs | None = None,
    termination: Termination | None = None,
    port_forwards: PortForwards | None = None,
) -> web.Application:
    app = web.Application(middlewares=[recorder.middleware])
    app[STORE], app[WATCHES], app[LOGS] = store, watches, logs or PodLogs()
    app[PORT_FORWARDS] = port_forwards or PortForwards()
    app[TERMINATION] = termination or Termination()
    app.router.add_route("*", "/api/{version}/{path:.*}", dispatch)
    app.router.add_route("*", "/apis/{group}/{version}/{path:.*}", dispatch)
    return app


async def dispatch(request: web.Request) -> web.StreamResponse:
    store = request.app[STORE]
    target = route(store, request)
    if target.plural == "bindings" or target.subresource == "binding":
        if request.method != "POST" or target.namespace is None:
            raise ApiError(405, f"fake apiserver: {request.method} is not supported on bindings")
        binding = _named(request[BODY], target.name)
        return json_response(store.bind(target.namespace, binding), 201)
    if target.plural == "pods" and target.subresource == "eviction" and target.name is not None:
        if request.method != "POST" or target.namespace is None:
            raise ApiError(405, f"fake apiserver: {request.method} is not supported on evictions")
        dry_run = request.query.get("dryRun") == "All"
        body, termination = _object(request[BODY]), request.app[TERMINATION]
        answer = evict(store, target.namespace, target.name, body, dry_run, termination)
        return json_response(answer, 201)
    if target.plural == "pods" and target.subresource == "log" and target.name is not None:
        return serve_log(request, store, target.namespace, target.name)
    if target.plural == "pods" and target.subresource == "portforward" and target.name is not None:
        return await serve_port_forward(request, store, target.namespace, target.name)
    if target.subresource not in (None, "status"):
        raise ApiError(404, NO_RESOURCE)
    if target.name is None:
        return await _collection(request, store, target)
    return _item(request, store, target, target.name)


def route(store: Store, request: web.Request) -> Target:
    """The target of /api/v1/... or /apis/group/version/...; 404 for anything not served."""
    info = request.match_info
    api_version = f"{info['group']}/{info['version']}" if "group" in info else info["version"]
    parts = info["path"].strip("/").split("/")
    namespace = None
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] != "status":
        namespace, parts = parts[1], parts[2:]
    plural, name, subresource = [*parts, None, None][:3]
    if parts == ["bindings"] and namespace is not None:
        return Target("bindings", namespace, None, None)
    key = store.key_of(api_version, str(plural))
    resource = store.resources.get(key) if key is not None and len(parts) <= 3 else None
    if resource is None or key is None or (namespace is not None) > resource.namespaced:
        raise ApiError(404, NO_RESOURCE)
    if resource.namespaced and name is not None and namespace is None:
        raise ApiError(404, NO_RESOURCE)
    return Target(key, namespace, name, subresource)


async def _collection(request: web.Request, store: Store, target: Target) -> web.StreamResponse:
    if request.method == "GET":
        selector = Selector.from_query(target.plural, target.namespace, request.query)
        if request.query.get("watch") in TRUE:
            return await _watch(request, selector)
        return json_response(_page(store.list_body(selector), request.query))
    if request.method == "POST":
        return json_response(
            store.create(target.plural, _object(request[BODY]), target.namespace), 201
        )
    raise ApiError(405, f"fake apiserver: {request.method} is not supported on {request.path}")


def _page(body: Json, query: Any) -> Json:
    limit = integer(query.get("limit", "0"), "limit")
    if limit <= 0:
        return body
    start, items = integer(query.get("continue", "0"), "continue"), body["items"]
    body = {**body, "metadata": dict(body["metadata"]), "items": items[start : start + limit]}
    if start + limit < len(items):
        body["metadata"]["continue"] = str(start + limit)
        body["metadata"]["remainingItemCount"] = len(items) - start - limit
    return body


def _item(request: web.Request, store: Store, target: Target, name: str) -> web.Response:
    plural, namespace, body = target.plural, target.namespace, request[BODY]
    if request.method == "GET":
        return json_response(store.get(plural, name, namespace))
    if request.method == "PUT":
        obj = _object(body)
        check_name(obj, name, missing_ok=True)
        return json_response(store.update(plural, _named(obj, name), namespace))
    if request.method == "PATCH":
        return json_response(store.patch(plural, name, body, request.content_type, namespace))
    if request.method == "DELETE":
        options = body if isinstance(body, dict) else {}
        preconditions = options.get("preconditions") or {}
        return json_response(store.delete(plural, name, namespace, preconditions))
    raise ApiError(405, f"fake apiserver: {request.method} is not supported on {request.path}")


async def _watch(request: web.Request, selector: Selector) -> web.StreamResponse:
    store, watches, query = request.app[STORE], request.app[WATCHES], request.query
    seconds = float(integer(query.get("timeoutSeconds", "0"), "timeoutSeconds"))
    watcher = Watcher(selector, query.get("allowWatchBookmarks") in TRUE, request.transport)
    backlog = store.backlog(selector, query.get("resourceVersion", ""))
    return await watches.stream(request, watcher, backlog, seconds, store.bookmark)


def _object(body: Any) -> Json:
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _named(body: Any, name: str | None) -> Json:
    obj = _object(body)
    if name is not None:
        obj.setdefault("metadata", {})["name"] = name
    return obj
