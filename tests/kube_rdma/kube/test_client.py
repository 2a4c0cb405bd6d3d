"""`call` and `stream` through kubernetes-asyncio over HTTP: against a tiny server that answers
every request with one status and body, the exact typed error for each status an apiserver
answers with; against the fake apiserver, real answers (an object, a 404, a 409, a 410 on a
watch); and the errors of a refused connection, a timeout and an answer that is not JSON."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client

from kube_rdma.kube.client import call, stream
from kube_rdma.kube.errors import (
    ApiError,
    ClientError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    Unreachable,
    error_for,
)
from testbed.fakeapi import FakeApiServer
from testbed.net import refusing_port

PATCH = {"metadata": {"labels": {"kube-rdma.io/rdma-ready": "true"}}}
MERGE_PATCH = "application/merge-patch+json"
DENIED = (
    'nodes "gpu-01" is forbidden: User "system:serviceaccount:kube-rdma:agent" cannot patch '
    'resource "nodes" in API group "" at the cluster scope'
)
UNREACHABLE_HINT = "(check the apiserver address and the network path to it)"


@dataclass
class Answer:
    """What the tiny server answers every request with."""

    status: int = 200
    body: bytes = b"{}"
    content_type: str = "application/json"
    delay: float = 0.0


def status_body(code: int, reason: str, message: str) -> bytes:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    return orjson.dumps(body | {"code": code, "reason": reason, "message": message})


def core_api(api_client: Any) -> Any:
    return client.CoreV1Api(api_client)


def api_client_for(host: str) -> Any:
    configuration = client.Configuration()
    configuration.host = host
    return client.ApiClient(configuration)


@pytest.fixture
async def answer() -> AsyncIterator[tuple[Answer, Any]]:
    """The answer the tiny server gives (change it in the test) and a CoreV1Api talking to it."""
    answer = Answer()

    async def handle(request: web.Request) -> web.Response:
        await asyncio.sleep(answer.delay)
        return web.Response(
            status=answer.status, body=answer.body, content_type=answer.content_type
        )

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        async with api_client_for(f"http://127.0.0.1:{runner.addresses[0][1]}") as api_client:
            yield answer, core_api(api_client)
    finally:
        await runner.cleanup()


def patch_node(core: Any) -> Any:
    return call("patch Node gpu-01", core.patch_node, "gpu-01", PATCH, _content_type=MERGE_PATCH)


# One row per status: the answer's status, reason and message, the error's class and its text.
STATUSES = [
    (400, "BadRequest", "the body is not JSON", ClientError, "BadRequest: the body is not JSON"),
    (
        401,
        "Unauthorized",
        "Unauthorized",
        Unauthorized,
        "Unauthorized: Unauthorized (check the client's credentials: the kubeconfig, or the "
        "ServiceAccount token)",
    ),
    (
        403,
        "Forbidden",
        DENIED,
        Forbidden,
        f"Forbidden: {DENIED} (check the Role or ClusterRole bound to this client)",
    ),
    (404, "NotFound", 'nodes "gpu-01" not found', NotFound, 'NotFound: nodes "gpu-01" not found'),
    (
        409,
        "Conflict",
        "the object has been modified",
        Conflict,
        "Conflict: the object has been modified",
    ),
    (
        410,
        "Expired",
        "too old resource version: 5 (9)",
        Gone,
        "Expired: too old resource version: 5 (9)",
    ),
    (
        422,
        "Invalid",
        'Node "gpu-01" is invalid: metadata.labels: Invalid value',
        Invalid,
        'Invalid: Node "gpu-01" is invalid: metadata.labels: Invalid value',
    ),
    (
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        TooManyRequests,
        "TooManyRequests: Too many requests, please try again later. (the apiserver is shedding "
        "load under API Priority and Fairness; it eases on its own)",
    ),
    (
        500,
        "InternalError",
        "etcdserver: leader changed",
        ServerError,
        "InternalError: etcdserver: leader changed",
    ),
    (
        503,
        "ServiceUnavailable",
        "apiserver is shutting down",
        ServerError,
        "ServiceUnavailable: apiserver is shutting down",
    ),
]


@pytest.mark.parametrize(("code", "reason", "message", "kind", "text"), STATUSES)
async def test_each_status_is_its_typed_error(
    answer: tuple[Answer, Any],
    code: int,
    reason: str,
    message: str,
    kind: type[ApiError],
    text: str,
) -> None:
    served, core = answer
    served.status, served.body = code, status_body(code, reason, message)
    with pytest.raises(ApiError) as raised:
        await patch_node(core)
    error = raised.value
    assert type(error) is kind
    assert (error.operation, error.status, error.reason, error.message) == (
        "patch Node gpu-01",
        code,
        reason,
        message,
    )
    assert str(error) == f"patch Node gpu-01: {text}"


async def test_the_hierarchy_groups_4xx_and_5xx() -> None:
    assert all(issubclass(kind, ClientError) for _, _, _, kind, _ in STATUSES[:-2])
    assert [issubclass(kind, ClientError) for kind in (ServerError, Unreachable)] == [False] * 2
    assert [issubclass(kind, ApiError) for kind in (ServerError, Unreachable)] == [True] * 2


@pytest.mark.parametrize(
    ("code", "body", "kind", "text"),
    [
        (
            502,
            b"<html>502 Bad Gateway</html>\n",
            ServerError,
            "HTTP 502: <html>502 Bad Gateway</html>",
        ),
        (504, b"", ServerError, "HTTP 504: no message"),
        (418, b'{"secret": "not a Status"}', ClientError, "HTTP 418: no message"),
        (502, b"x" * 300, ServerError, "HTTP 502: " + "x" * 197 + "..."),
    ],
    ids=["proxy page", "empty", "JSON not a Status", "long text"],
)
async def test_an_answer_without_a_status_body(
    answer: tuple[Answer, Any], code: int, body: bytes, kind: type[ApiError], text: str
) -> None:
    served, core = answer
    served.status, served.body, served.content_type = code, body, "text/html"
    with pytest.raises(ApiError) as raised:
        await call("read Node gpu-01", core.read_node, "gpu-01")
    assert (type(raised.value), raised.value.status) == (kind, code)
    assert str(raised.value) == f"read Node gpu-01: {text}"


@pytest.mark.parametrize("body", [b"not json", b'["a list"]'])
async def test_a_2xx_answer_that_is_not_an_object_is_not_echoed(
    answer: tuple[Answer, Any], body: bytes
) -> None:
    served, core = answer
    served.body = body
    with pytest.raises(ApiError) as raised:
        await call("read Secret kube-rdma/tls", core.read_namespaced_secret, "tls", "kube-rdma")
    assert type(raised.value) is ApiError
    assert raised.value.status == 200
    assert str(raised.value) == "read Secret kube-rdma/tls: InvalidResponse: not a JSON object"


async def test_a_refused_connection_is_unreachable() -> None:
    with refusing_port() as port:
        async with api_client_for(f"http://127.0.0.1:{port}") as api_client:
            with pytest.raises(ApiError) as raised:
                await call("list nodes", core_api(api_client).list_node)
        error = raised.value
        assert type(error) is Unreachable
        assert (error.status, error.reason) == (None, "Unreachable")
        assert str(error) == (
            f"list nodes: Unreachable: Cannot connect to host 127.0.0.1:{port} ssl:default "
            f"[Connect call failed ('127.0.0.1', {port})] {UNREACHABLE_HINT}"
        )


async def test_a_timeout_is_unreachable(answer: tuple[Answer, Any]) -> None:
    served, core = answer
    served.delay = 1.0
    with pytest.raises(ApiError) as raised:
        await call("read Node gpu-01", core.read_node, "gpu-01", request_timeout=0.05)
    assert type(raised.value) is Unreachable
    assert (
        str(raised.value) == f"read Node gpu-01: Unreachable: no answer in time {UNREACHABLE_HINT}"
    )


async def test_an_error_kubernetes_asyncio_raised_itself(answer: tuple[Answer, Any]) -> None:
    """A method that preloads its answer whatever it is given: kubernetes-asyncio's ApiException
    becomes the same typed error."""
    served, core = answer
    served.status, served.body = 404, status_body(404, "NotFound", 'nodes "gpu-01" not found')

    async def preloading(**ignored: Any) -> Any:
        return await core.read_node("gpu-01")

    with pytest.raises(NotFound) as raised:
        await call("read Node gpu-01", preloading)
    assert str(raised.value) == 'read Node gpu-01: NotFound: nodes "gpu-01" not found'
    assert type(raised.value.__cause__) is client.ApiException


# --- against the fake apiserver ----------------------------------------------------------------


async def test_the_decoded_object(fake_api: FakeApiServer, core_v1: Any) -> None:
    stored = fake_api.create("nodes", {"metadata": {"name": "gpu-01"}})
    assert await call("read Node gpu-01", core_v1.read_node, "gpu-01") == stored
    patched = await call(
        "patch Node gpu-01", core_v1.patch_node, "gpu-01", PATCH, _content_type=MERGE_PATCH
    )
    assert patched == fake_api.get("nodes", "gpu-01")
    assert patched["metadata"]["labels"] == {"kube-rdma.io/rdma-ready": "true"}


async def test_a_missing_object_is_not_found(fake_api: FakeApiServer, core_v1: Any) -> None:
    with pytest.raises(NotFound) as raised:
        await call("read Node gpu-01", core_v1.read_node, "gpu-01")
    assert raised.value.status == 404
    assert str(raised.value) == 'read Node gpu-01: NotFound: nodes "gpu-01" not found'


async def test_a_stale_write_is_a_conflict(fake_api: FakeApiServer, core_v1: Any) -> None:
    node = fake_api.create("nodes", {"metadata": {"name": "gpu-01"}})
    fake_api.patch("nodes", "gpu-01", PATCH)
    with pytest.raises(Conflict) as raised:
        await call("update Node gpu-01", core_v1.replace_node, "gpu-01", node)
    assert str(raised.value) == (
        'update Node gpu-01: Conflict: Operation cannot be fulfilled on nodes "gpu-01": the '
        "object has been modified; please apply your changes to the latest version and try again"
    )


def watch(core: Any, version: str) -> Any:
    return stream(
        "watch nodes", core.list_node, watch=True, resource_version=version, timeout_seconds=1
    )


async def test_a_watch_streams_its_events(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("nodes", {"metadata": {"name": "gpu-01"}})  # 101
    fake_api.create("nodes", {"metadata": {"name": "gpu-02"}})  # 102
    async with watch(core_v1, "101") as response:
        event = orjson.loads(await response.content.readline())
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "gpu-02")


async def test_a_watch_answered_410_is_gone(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.fail("GET", "/api/v1/nodes", 410, watch=True)
    with pytest.raises(Gone) as raised:
        async with watch(core_v1, "101"):
            pass
    assert str(raised.value) == "watch nodes: Expired: fake apiserver: injected failure"


async def test_a_watch_error_event_is_the_same_typed_error(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("nodes", {"metadata": {"name": "gpu-01"}})  # 101
    fake_api.compact()
    async with watch(core_v1, "100") as response:
        event = orjson.loads(await response.content.readline())
    assert event["type"] == "ERROR"
    error = error_for("watch nodes", event["object"]["code"], event["object"])
    assert type(error) is Gone
    assert str(error) == "watch nodes: Expired: too old resource version: 100 (101)"
