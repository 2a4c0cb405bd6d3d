"""Shared fixtures: real certificates from `kube-rdma certs generate`, the real webhook app
served over HTTPS on a loopback port, the HTTP-level fake apiserver (`fake_api`, `core_v1`), and
a loopback port another process cannot take (`held_port`)."""

from __future__ import annotations

import socket
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest
from aiohttp import web

from certs.serving import server_context
from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import main
from testbed.fakeapi import core_v1 as core_v1
from testbed.fakeapi import fake_api as fake_api
from testbed.logstate import LoggingState, preserved_logging
from webhook.app import Settings, create_app
from webhook.namespaces import NamespaceSource

pytest_plugins = ["pytester", "testbed.skips_fail_in_ci"]

# Checks in testbed that the tests assert through: rewritten like the tests' own asserts, so
# that a failing one shows the values it compared.
pytest.register_assert_rewrite("testbed.webhook_cases")


LOGGING_AT_START = LoggingState.now()
"""The logging module as pytest set it up, before any test or fixture ran kube-rdma's main()."""


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """Whatever an in-process `main([...])` configured, in the test or in a fixture of a wider
    scope, the next test starts without it."""
    yield
    LOGGING_AT_START.restore(keep=lambda handler: type(handler).__module__ == "_pytest.logging")


@pytest.fixture(scope="session")
def cert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("certs")
    args = ["certs", "generate", "--service", "kube-rdma-webhook", "--namespace", "kube-rdma"]
    with preserved_logging():
        assert main([*args, "--out", str(out), "--localhost"]) == 0
    return out


@pytest.fixture
def held_port() -> Iterator[int]:
    """A loopback port that this process holds, bound and listening, while the test runs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@dataclass
class WebhookClient:
    """An HTTPS client for a running webhook, verifying its certificate against the CA."""

    session: aiohttp.ClientSession
    base: str

    async def post(self, body: bytes, path: str = "/mutate") -> tuple[int, Json]:
        headers = {"Content-Type": "application/json"}
        async with self.session.post(self.base + path, data=body, headers=headers) as response:
            return response.status, orjson.loads(await response.read())

    async def review(self, request: Json) -> Json:
        """POST an AdmissionReview holding `request`; the `response` part of the answer."""
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": request,
        }
        status, body = await self.post(orjson.dumps(review))
        assert status == 200, body
        assert body["apiVersion"] == "admission.k8s.io/v1"
        assert body["kind"] == "AdmissionReview"
        response: Json = body["response"]
        assert response["uid"] == request["uid"]
        return response

    async def get(self, path: str) -> tuple[int, str]:
        async with self.session.get(self.base + path) as response:
            return response.status, await response.text()


Serve = Callable[..., AbstractAsyncContextManager[WebhookClient]]


@pytest.fixture
def serve(cert_dir: Path) -> Serve:
    """Start the webhook app over TLS; yields a client trusting the test CA."""

    @asynccontextmanager
    async def run(
        settings: Settings, namespaces: NamespaceSource | None = None
    ) -> AsyncIterator[WebhookClient]:
        runner = web.AppRunner(create_app(settings, namespaces), access_log=None)
        await runner.setup()
        tls = server_context(cert_dir / "tls.crt", cert_dir / "tls.key")
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
        await site.start()
        port = runner.addresses[0][1]
        client_tls = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
        connector = aiohttp.TCPConnector(ssl=client_tls)
        try:
            async with aiohttp.ClientSession(connector=connector) as session:
                yield WebhookClient(session, f"https://localhost:{port}")
        finally:
            await runner.cleanup()

    return run
