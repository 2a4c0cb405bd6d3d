"""The OpenAPI descriptions in docs/api/ stay true to the servers: every route the aiohttp apps
register is described, with its method, and every described operation is a route."""

from __future__ import annotations

import pytest
import yaml
from aiohttp import web

from extender.app import Settings as ExtenderSettings
from extender.app import create_app as extender_app
from extender.cluster.snapshot import SnapshotSource
from testbed import schemas
from webhook.app import Settings as WebhookSettings
from webhook.app import create_app as webhook_app
from webhook.namespaces import StaticNamespaces

METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def routes(app: web.Application) -> set[tuple[str, str]]:
    """(METHOD, path) of every route; the HEAD that aiohttp adds beside each GET left out."""
    found = set()
    for route in app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        found.add((route.method, path))
    return {(m, p) for m, p in found if not (m == "HEAD" and ("GET", p) in found)}


def described(name: str) -> set[tuple[str, str]]:
    paths = schemas.openapi(name)["paths"]
    return {(m.upper(), p) for p, item in paths.items() for m in item if m in METHODS}


APPS = {
    "extender": lambda: extender_app(ExtenderSettings(), SnapshotSource()),
    "webhook": lambda: webhook_app(WebhookSettings(), StaticNamespaces()),
}


@pytest.mark.parametrize("name", sorted(APPS))
def test_the_description_names_every_route_and_only_routes(name: str) -> None:
    registered, written = routes(APPS[name]()), described(name)
    assert registered - written == set(), f"routes missing from docs/api/{name}.openapi.yaml"
    assert written - registered == set(), f"docs/api/{name}.openapi.yaml describes no route"


@pytest.mark.parametrize("name", sorted(APPS))
def test_the_description_loads_and_its_schemas_are_json_schemas(name: str) -> None:
    import jsonschema  # type: ignore[import-untyped]
    import schemathesis

    path = schemas.API_DOCS / f"{name}.openapi.yaml"
    schemathesis.openapi.from_path(path).validate()
    for schema in yaml.safe_load(path.read_text())["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
