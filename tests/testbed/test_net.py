"""A server is up when its /healthz answers, not when a TCP connect to its port succeeds."""

from __future__ import annotations

import socket
import threading

import pytest
from aiohttp import web

from testbed import net
from testbed.net import healthy, serving


def test_a_port_that_accepts_and_hangs_up_is_not_healthy() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def hang_up() -> None:
            served, _ = listener.accept()
            served.close()

        thread = threading.Thread(target=hang_up)
        thread.start()
        assert healthy(f"http://127.0.0.1:{listener.getsockname()[1]}") is False
        thread.join()


def test_nothing_listening_is_not_healthy() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert healthy(f"http://127.0.0.1:{port}") is False


async def test_an_app_answering_healthz_is_healthy() -> None:
    import asyncio

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def failing(_: web.Request) -> web.Response:
        return web.Response(status=503, text="starting\n")

    for handler, expected in ((ok, True), (failing, False)):
        app = web.Application()
        app.router.add_get("/healthz", handler)
        async with serving(app) as url:
            assert await asyncio.to_thread(healthy, url) is expected


def test_a_self_connect_is_no_listener(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a loaded machine can produce: nothing listens, yet the connect succeeds."""
    looped = socket.socket()
    looped.bind(("127.0.0.1", 0))
    port = looped.getsockname()[1]
    looped.connect(("127.0.0.1", port))
    assert looped.getsockname() == looped.getpeername()
    monkeypatch.setattr(socket, "create_connection", lambda *_, **__: looped)
    assert net.listening(port) is False
