"""TLS as the server enforces it: nothing older than TLS 1.2 (TLS 1.3 by default), and no key,
token or certificate body in any log line, whatever happens to the certificates."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
import ssl
import warnings
from pathlib import Path

import pytest
from aiohttp import web

from certs.generate import KeyPair, generate_ca, generate_serving
from certs.reload import CertificateReloader
from certs.serving import TLSPolicy
from webhook.app import Settings, create_app

NAMES = ["localhost", "kube-rdma-webhook.kube-rdma.svc"]


def client_of(version: ssl.TLSVersion) -> ssl.SSLContext:
    """A client offering only `version`: OpenSSL 3 refuses TLS 1.0 and 1.1 at its default
    security level, so the level is lowered to 0 and the refusal can only be the server's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
        context.minimum_version = context.maximum_version = version
    return context


def handshake(port: int, version: ssl.TLSVersion) -> str:
    """The version negotiated, or the error the client saw."""
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            client_of(version).wrap_socket(raw) as tls,
        ):
            return str(tls.version())
    except (ssl.SSLError, OSError) as e:
        return f"refused: {type(e).__name__}"


def permissive_server(pair: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = ssl.TLSVersion.TLSv1
    context.load_cert_chain(pair / "tls.crt", pair / "tls.key")
    return context


@pytest.fixture
def pair_dir(tmp_path: Path) -> Path:
    ca = generate_ca("test CA")
    write(tmp_path, generate_serving(ca, NAMES))
    return tmp_path


def write(directory: Path, pair: KeyPair, key: bytes | None = None) -> None:
    (directory / "tls.crt").write_bytes(pair.cert_pem)
    (directory / "tls.key").write_bytes(key if key is not None else pair.key_pem)


OLD = [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1]


@pytest.mark.parametrize("version", OLD, ids=["TLSv1.0", "TLSv1.1"])
async def test_the_server_refuses_tls_below_1_2(pair_dir: Path, version: ssl.TLSVersion) -> None:
    policy = TLSPolicy(min_version="1.2")
    reloader = CertificateReloader(pair_dir / "tls.crt", pair_dir / "tls.key", policy=policy)
    assert reloader.context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert reloader.current.minimum_version == ssl.TLSVersion.TLSv1_2
    control = await asyncio.start_server(
        lambda r, w: w.close(), "127.0.0.1", 0, ssl=permissive_server(pair_dir)
    )
    ours = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0, ssl=reloader.context)
    async with control, ours:
        control_port = control.sockets[0].getsockname()[1]
        port = ours.sockets[0].getsockname()[1]
        # The same client completes the old handshake with a server that allows it ...
        negotiated = await asyncio.to_thread(handshake, control_port, version)
        assert negotiated == version.name.replace("_", ".")
        # ... and is refused by ours, which also serves TLS 1.2 to a client of that version.
        assert (await asyncio.to_thread(handshake, port, version)).startswith("refused")
        assert await asyncio.to_thread(handshake, port, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"


def secrets_of(pair: KeyPair) -> list[str]:
    """Text that must never reach a log: PEM markers, and lines of the key and certificate."""
    bodies = [pair.key_pem, pair.cert_pem]
    lines = [line for pem in bodies for line in pem.decode().splitlines() if "-----" not in line]
    return [
        "-----BEGIN",
        "PRIVATE KEY",
        *lines[:3],
        *lines[-3:],
        base64.b64encode(pair.key_pem).decode()[:40],
    ]


async def test_no_key_or_certificate_in_any_log(
    pair_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ca = generate_ca("test CA")
    first, second, other = (generate_serving(ca, NAMES) for _ in range(3))
    write(pair_dir, first)
    reloader = CertificateReloader(pair_dir / "tls.crt", pair_dir / "tls.key", ["localhost"])
    runner = web.AppRunner(create_app(Settings(), tls=reloader), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=reloader.context).start()
    try:
        write(pair_dir, second)
        assert reloader.check()  # rotation
        write(pair_dir, first, other.key_pem)
        assert not reloader.check()  # a key that does not belong to the certificate
        write(pair_dir, first, first.key_pem[:200])
        assert not reloader.check()  # a truncated key
        write(pair_dir, first, first.cert_pem)
        assert not reloader.check()  # a certificate where the key should be
        assert not reloader.load_pair(other.key_pem, other.cert_pem)  # swapped, from a Secret
        assert not reloader.load_pair(b"garbage", second.key_pem)
    finally:
        await runner.cleanup()
    text = "\n".join(
        [
            caplog.text,
            *(r.getMessage() for r in caplog.records),
            *(str(r.args) for r in caplog.records),
        ]
    )
    assert "rejected a new serving certificate" in text
    for pair in (first, second, other):
        for secret in secrets_of(pair):
            assert secret not in text
