"""The webhook under load and hostile clients.

A bounded load (bench/webhook_faults.py, scaled down) while the certificate rotates and the
profiles file is rewritten fails no request. Clients that open a connection and never finish
the TLS handshake, that trickle their headers (slowloris) or that send an oversized body do not
hold up the reviews of others, and the extender refuses an oversized body with 413 as well.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path

import aiohttp
import orjson

from bench.webhook_faults import review_body, run
from extender.app import Settings as ExtenderSettings
from extender.app import create_app as extender_app
from extender.cluster.snapshot import SnapshotSource
from tests.conftest import Serve
from webhook.app import Settings

HOSTILE = 20


async def test_load_with_rotation_and_profile_rewrites_fails_nothing() -> None:
    """Every answer is exactly the patch of one of the two profile versions; the rotations are
    counted by the certificates the clients were served, not only by the reloader."""
    outcome = await run(reviews=600, concurrency=64, fault_every=0.1)
    assert outcome.failed == 0, outcome.summary()
    assert outcome.rotations >= 2, outcome.summary()
    assert outcome.served_serials >= 3, outcome.summary()  # the first and two rotated
    assert outcome.profile_writes >= 2, outcome.summary()


def half_handshakes(port: int) -> list[socket.socket]:
    """Connections that send part of a ClientHello and then nothing."""
    held = []
    for _ in range(HOSTILE):
        conn = socket.create_connection(("127.0.0.1", port))
        conn.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        held.append(conn)
    return held


def slowloris(port: int, cafile: Path) -> list[ssl.SSLSocket]:
    """TLS connections that send the start of a request's headers and never finish them."""
    context = ssl.create_default_context(cafile=str(cafile))
    held = []
    for _ in range(HOSTILE):
        raw = socket.create_connection(("127.0.0.1", port))
        conn = context.wrap_socket(raw, server_hostname="localhost")
        conn.sendall(b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        held.append(conn)
    return held


def oversized(port: int, cafile: Path) -> ssl.SSLSocket:
    """A request announcing a body of 1 GiB, of which only the first bytes arrive."""
    context = ssl.create_default_context(cafile=str(cafile))
    raw = socket.create_connection(("127.0.0.1", port))
    conn = context.wrap_socket(raw, server_hostname="localhost")
    conn.sendall(b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1073741824\r\n\r\n")
    conn.sendall(b"{" * 65536)
    return conn


async def test_hostile_clients_do_not_hold_up_reviews(
    serve: Serve, settings: Settings, cert_dir: Path
) -> None:
    async with serve(settings) as client:
        port = int(client.base.rsplit(":", 1)[1])
        cafile = cert_dir / "ca.crt"
        held: list[socket.socket] = [
            *await asyncio.to_thread(half_handshakes, port),
            *await asyncio.to_thread(slowloris, port, cafile),
            await asyncio.to_thread(oversized, port, cafile),
        ]

        async def reviews() -> None:
            for _ in range(20):
                status, body = await client.post(review_body())
                assert status == 200, body

        try:
            # The webhook never times the hostile connections out: a review they held up would
            # wait for ever, so a bound on the wait, not a timing, tells.
            await asyncio.wait_for(reviews(), 60)
        finally:
            for conn in held:
                conn.close()


async def test_extender_refuses_an_oversized_body() -> None:
    app = extender_app(ExtenderSettings(max_body_bytes=4096), SnapshotSource([]))
    runner = aiohttp.web.AppRunner(app, access_log=None)
    await runner.setup()
    await aiohttp.web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    body = orjson.dumps({"Pod": {"metadata": {"name": "x" * 5000}}, "NodeNames": []})
    try:
        async with aiohttp.ClientSession() as session:
            for verb in ("filter", "prioritize", "bind"):
                async with session.post(f"{url}/{verb}", data=body) as response:
                    assert (response.status, await response.json()) == (
                        413,
                        {"error": "body larger than 4096 bytes"},
                    )
            async with session.get(f"{url}/healthz") as response:
                assert response.status == 200
    finally:
        await runner.cleanup()
