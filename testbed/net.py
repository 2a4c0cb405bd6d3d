"""Loopback helpers for tests and benches that start kube-rdma processes or serve its apps."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator

from aiohttp import web


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port held bound but not listening: every connect to it is refused, and no
    other process (nor a TCP self-connect) can take it while the block runs."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port: int = held.getsockname()[1]
        yield port


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def listening(port: int) -> bool:
    """Something accepts connections on 127.0.0.1:`port`.

    A connect that the kernel completed with itself (a TCP self-connect: nothing listens on a
    port in the ephemeral range, and the connect drew that same port as its source) is no
    listener.
    """
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
            return bool(conn.getsockname() != conn.getpeername())
    except OSError:
        return False


def healthy(base_url: str, context: ssl.SSLContext | None = None) -> bool:
    """`base_url`/healthz answers 200: the server runs its app, not merely a bound port."""
    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=2, context=context) as answer:
            return bool(answer.status == 200)
    except (OSError, http.client.HTTPException):
        return False


def wait_healthy(
    base_url: str, context: ssl.SSLContext | None = None, seconds: float = 60.0
) -> bool:
    """Block until `base_url`/healthz answers 200; False when `seconds` passed first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if healthy(base_url, context):
            return True
        time.sleep(0.1)
    return False


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """`app` served on a free loopback port (no access log), as its base URL; cleaned up after."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
