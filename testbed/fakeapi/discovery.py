"""API discovery: GET /api/v1 and /apis/GROUP/VERSION answer the APIResourceList of the resources
the fake serves in that group version, and 404 for a group version it does not serve, as an
apiserver without that CRD does; GET /apis/GROUP answers the APIGroup with its served versions.
Clients find optional resources (a CRD's) this way before they list them; installing one into
the running fake (`FakeApiServer.install`) makes it appear here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from aiohttp import web

from kube_rdma.core.objects import Json
from testbed.fakeapi.errors import NO_RESOURCE, ApiError, json_response
from testbed.fakeapi.routes import STORE
from testbed.fakeapi.store import Resource

VERBS: Final = ["create", "delete", "get", "list", "patch", "update", "watch"]


def add_discovery_routes(app: web.Application) -> None:
    app.router.add_get("/api/{version}", _serve)
    app.router.add_get("/apis/{group}/{version}", _serve)
    app.router.add_get("/apis/{group}", _serve_group)
    app.router.add_get("/apis/{group}/", _serve_group)  # as kubernetes-asyncio asks


def api_group(resources: Mapping[str, Resource], group: str) -> Json | None:
    """The APIGroup of `group`: the versions it serves; None when it serves none."""
    versions = sorted({r.api_version for r in resources.values() if r.group == group})
    if not versions:
        return None
    listed = [{"groupVersion": v, "version": v.rpartition("/")[2]} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": listed,
        "preferredVersion": listed[-1],
    }


def api_resources(resources: Mapping[str, Resource], api_version: str) -> Json | None:
    """The APIResourceList of `api_version` ("v1", "batch/v1"); None when none is served."""
    served = [
        {
            "name": resource.plural or key,
            "singularName": resource.kind.lower(),
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": VERBS,
        }
        for key, resource in sorted(resources.items())
        if resource.api_version == api_version
    ]
    if not served:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": api_version,
        "resources": served,
    }


async def _serve(request: web.Request) -> web.Response:
    info = request.match_info
    api_version = f"{info['group']}/{info['version']}" if "group" in info else info["version"]
    body = api_resources(request.app[STORE].resources, api_version)
    if body is None:
        raise ApiError(404, NO_RESOURCE)
    return json_response(body)


async def _serve_group(request: web.Request) -> web.Response:
    body = api_group(request.app[STORE].resources, request.match_info["group"])
    if body is None:
        raise ApiError(404, NO_RESOURCE)
    return json_response(body)
