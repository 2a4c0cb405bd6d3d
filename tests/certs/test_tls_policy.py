"""The TLS kube-rdma's HTTPS servers speak (certs/serving.py), over real handshakes with
certificates from certs/generate.py: TLS 1.3 by default, TLS 1.2 on request with AEAD suites
only (no CBC, no DHE), and client certificates required when a client CA is given."""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path

import pytest

from certs.generate import KeyPair, generate_ca, generate_client, generate_serving
from certs.reload import CertificateReloader
from certs.serving import TLSConfigError, TLSPolicy, server_context


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    ca, other = generate_ca("kube-rdma test CA"), generate_ca("another CA")
    write(tmp_path, "tls", generate_serving(ca, ["localhost"], ["127.0.0.1"]))
    write(tmp_path, "client", generate_client(ca, "kube-scheduler"))
    write(tmp_path, "stranger", generate_client(other, "kube-scheduler"))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    return tmp_path


def write(directory: Path, name: str, pair: KeyPair) -> None:
    (directory / f"{name}.crt").write_bytes(pair.cert_pem)
    (directory / f"{name}.key").write_bytes(pair.key_pem)


def client(
    pki: Path,
    version: ssl.TLSVersion | None = None,
    ciphers: str | None = None,
    cert: str | None = None,
) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if version is not None:
        context.minimum_version = context.maximum_version = version
    if ciphers is not None:
        context.set_ciphers(ciphers)
    if cert is not None:
        context.load_cert_chain(pki / f"{cert}.crt", pki / f"{cert}.key")
    return context


def exchange(port: int, context: ssl.SSLContext) -> str:
    """The version and suite negotiated once the server answered, or how the client was
    refused (with TLS 1.3 a refused client certificate shows on the first read)."""
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.sendall(b"ping")
            if tls.recv(4) != b"pong":
                return "refused: closed"
            return f"{tls.version()} {tls.cipher()[0]}"  # type: ignore[index]
    except (ssl.SSLError, OSError) as e:
        return f"refused: {type(e).__name__}"


async def serving(context: ssl.SSLContext) -> asyncio.Server:
    async def pong(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if await reader.read(4) == b"ping":
                writer.write(b"pong")
                await writer.drain()
        except (ssl.SSLError, OSError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(pong, "127.0.0.1", 0, ssl=context)


async def outcome(server_side: ssl.SSLContext, client_side: ssl.SSLContext) -> str:
    server = await serving(server_side)
    async with server:
        port = server.sockets[0].getsockname()[1]
        return await asyncio.to_thread(exchange, port, client_side)


async def test_tls_1_3_by_default_and_tls_1_2_refused(pki: Path) -> None:
    reloader = CertificateReloader(pki / "tls.crt", pki / "tls.key")
    assert reloader.context.minimum_version == ssl.TLSVersion.TLSv1_3
    assert (await outcome(reloader.context, client(pki))).startswith("TLSv1.3 ")
    tls12 = client(pki, ssl.TLSVersion.TLSv1_2)
    assert (await outcome(reloader.context, tls12)).startswith("refused")


CBC = ["ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-ECDSA-AES128-SHA256"]
AEAD = [
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
]


@pytest.mark.parametrize("suite", CBC)
async def test_tls_1_2_refuses_cbc_suites(pki: Path, suite: str) -> None:
    context = server_context(pki / "tls.crt", pki / "tls.key", TLSPolicy(min_version="1.2"))
    assert (await outcome(context, client(pki, ssl.TLSVersion.TLSv1_2, suite))).startswith(
        "refused"
    )


@pytest.mark.parametrize("suite", AEAD)
async def test_tls_1_2_serves_ecdhe_aead_suites(pki: Path, suite: str) -> None:
    context = server_context(pki / "tls.crt", pki / "tls.key", TLSPolicy(min_version="1.2"))
    assert await outcome(context, client(pki, ssl.TLSVersion.TLSv1_2, suite)) == f"TLSv1.2 {suite}"


def test_the_tls_1_2_suites_offered_are_ecdhe_aead_only(pki: Path) -> None:
    context = server_context(pki / "tls.crt", pki / "tls.key", TLSPolicy(min_version="1.2"))
    tls12 = [c for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12
    for suite in tls12:
        assert suite["kea"] == "kx-ecdhe", suite["name"]
        assert suite["aead"], suite["name"]


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2])
async def test_a_client_ca_requires_a_client_certificate_it_signed(
    pki: Path, version: ssl.TLSVersion
) -> None:
    policy = TLSPolicy(min_version="1.2", client_ca=pki / "ca.crt")
    reloader = CertificateReloader(pki / "tls.crt", pki / "tls.key", policy=policy)
    served = await outcome(reloader.context, client(pki, version, cert="client"))
    assert served.startswith(version.name.replace("_", ".") + " ")
    assert (await outcome(reloader.context, client(pki, version))).startswith("refused")
    stranger = client(pki, version, cert="stranger")
    assert (await outcome(reloader.context, stranger)).startswith("refused")


def test_an_unreadable_client_ca_or_version_is_a_config_error(pki: Path) -> None:
    (pki / "bad.crt").write_text("not a certificate")
    with pytest.raises(TLSConfigError, match="cannot load the client CA"):
        server_context(pki / "tls.crt", pki / "tls.key", TLSPolicy(client_ca=pki / "bad.crt"))
    with pytest.raises(TLSConfigError, match="cannot read the client CA"):
        server_context(pki / "tls.crt", pki / "tls.key", TLSPolicy(client_ca=pki / "none.crt"))
    with pytest.raises(TLSConfigError, match=r"TLS 1.1 is not served"):
        server_context(pki / "tls.crt", pki / "tls.key", TLSPolicy(min_version="1.1"))
