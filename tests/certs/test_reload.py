"""Hot reload of the serving certificate: rotation under load with zero failed requests, and bad
pairs rejected while the old one keeps serving."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import orjson
import pytest
from aiohttp import web
from cryptography import x509
from prometheus_client import CollectorRegistry

from certs.generate import KeyPair, generate_ca, generate_serving, service_dns_names
from certs.reload import CertificateReloader
from certs.serving import TLSConfigError
from certs.watch import watch_certificate
from testbed.builders import pods
from testbed.fakeapi import eventually
from webhook.app import Settings, create_app

NAMES = [*service_dns_names("kube-rdma-webhook", "kube-rdma"), "localhost"]
REQUIRED = ["kube-rdma-webhook.kube-rdma.svc"]


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return generate_ca("test CA")


def write(directory: Path, pair: KeyPair, key: bytes | None = None) -> None:
    (directory / "tls.crt").write_bytes(pair.cert_pem)
    (directory / "tls.key").write_bytes(key if key is not None else pair.key_pem)


def serial(pair: KeyPair) -> int:
    return x509.load_pem_x509_certificate(pair.cert_pem).serial_number


def served_serial(port: int, cafile: Path) -> int:
    context = ssl.create_default_context(cafile=str(cafile))
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


@pytest.fixture
def tls_dir(tmp_path: Path, ca: KeyPair) -> Path:
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    write(tmp_path, generate_serving(ca, NAMES))
    return tmp_path


async def serving(reloader: CertificateReloader) -> tuple[web.AppRunner, int]:
    app = create_app(Settings(), tls=reloader)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=reloader.context)
    await site.start()
    return runner, runner.addresses[0][1]


@pytest.fixture
async def running(tls_dir: Path) -> AsyncIterator[tuple[CertificateReloader, int]]:
    reloader = CertificateReloader(tls_dir / "tls.crt", tls_dir / "tls.key", REQUIRED)
    runner, port = await serving(reloader)
    try:
        yield reloader, port
    finally:
        await runner.cleanup()


async def test_rotation_while_reviews_keep_coming_fails_none(
    running: tuple[CertificateReloader, int], tls_dir: Path, ca: KeyPair
) -> None:
    reloader, port = running
    client_tls = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    # A new connection, so a new handshake, for every request.
    connector = aiohttp.TCPConnector(ssl=client_tls, force_close=True)
    results: list[int] = []
    stop = asyncio.Event()

    review = orjson.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": pods.request(
                pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/inject": "true"})
            ),
        }
    )

    async def keep_calling(session: aiohttp.ClientSession) -> None:
        while not stop.is_set():
            async with session.post(f"https://localhost:{port}/mutate", data=review) as response:
                body = await response.json()
                results.append(response.status if "patch" in body["response"] else 0)

    pairs = [generate_serving(ca, NAMES) for _ in range(3)]
    async with aiohttp.ClientSession(connector=connector) as session:
        callers = [asyncio.create_task(keep_calling(session)) for _ in range(4)]
        for pair in pairs:
            await asyncio.sleep(0.1)
            write(tls_dir, pair)
            assert reloader.check() is True
            await asyncio.sleep(0.05)
            assert await asyncio.to_thread(served_serial, port, tls_dir / "ca.crt") == serial(pair)
        stop.set()
        await asyncio.gather(*callers)
    assert len(results) > 20
    assert set(results) == {200}


def bad_pairs(ca: KeyPair) -> list[tuple[str, KeyPair, bytes | None, str]]:
    good = generate_serving(ca, NAMES)
    other = generate_serving(ca, NAMES)
    past = dt.datetime.now(dt.UTC) - dt.timedelta(days=400)
    expired = generate_serving(ca, NAMES, now=past)
    wrong_san = generate_serving(ca, ["other.kube-rdma.svc"])
    return [
        ("mismatched-key", good, other.key_pem, "that it belongs to the certificate"),
        ("expired", expired, None, "expired at"),
        ("wrong-san", wrong_san, None, "does not cover kube-rdma-webhook.kube-rdma.svc"),
        ("not-pem", good, b"garbage", "cannot load certificate"),
    ]


@pytest.mark.parametrize(
    "case", range(4), ids=["mismatched-key", "expired", "wrong-san", "not-pem"]
)
async def test_a_bad_pair_is_rejected_and_the_old_one_keeps_serving(
    case: int,
    running: tuple[CertificateReloader, int],
    tls_dir: Path,
    ca: KeyPair,
    caplog: pytest.LogCaptureFixture,
) -> None:
    reloader, port = running
    before = await asyncio.to_thread(served_serial, port, tls_dir / "ca.crt")
    _, pair, key, message = bad_pairs(ca)[case]
    results: list[str] = []
    reloader.on_result = results.append
    write(tls_dir, pair, key)
    assert reloader.check() is False
    assert results == ["rejected"]
    assert message in caplog.text
    assert "BEGIN" not in caplog.text, "no key material in logs"
    assert await asyncio.to_thread(served_serial, port, tls_dir / "ca.crt") == before


async def test_metrics_count_reloads_and_show_expiry(
    running: tuple[CertificateReloader, int], tls_dir: Path, ca: KeyPair
) -> None:
    reloader, port = running
    write(tls_dir, generate_serving(ca, NAMES))
    reloader.check()
    write(tls_dir, generate_serving(ca, ["wrong"]))
    reloader.check()
    client_tls = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    connector = aiohttp.TCPConnector(ssl=client_tls)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(f"https://localhost:{port}/metrics") as response,
    ):
        text = await response.text()
    assert 'kube_rdma_tls_reloads_total{result="loaded"} 1.0' in text
    assert 'kube_rdma_tls_reloads_total{result="rejected"} 1.0' in text
    expiry = next(
        float(line.split()[1])
        for line in text.splitlines()
        if line.startswith("kube_rdma_tls_certificate_expiry_seconds ")
    )
    assert 364 * 86400 < expiry <= 365 * 86400


async def test_the_app_notices_changed_files_by_itself(tls_dir: Path, ca: KeyPair) -> None:
    reloader = CertificateReloader(tls_dir / "tls.crt", tls_dir / "tls.key")
    app = web.Application()
    watch_certificate(app, reloader, CollectorRegistry(), interval=0.02)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        before = reloader.current
        write(tls_dir, generate_serving(ca, NAMES))
        await eventually(lambda: reloader.current is not before)
    finally:
        await runner.cleanup()


def test_a_bad_pair_at_start_is_an_error(tls_dir: Path, ca: KeyPair) -> None:
    write(tls_dir, generate_serving(ca, ["other.svc"]))
    with pytest.raises(TLSConfigError, match=r"does not cover kube-rdma-webhook\.kube-rdma\.svc"):
        CertificateReloader(tls_dir / "tls.crt", tls_dir / "tls.key", REQUIRED)


async def test_a_pair_from_memory_is_taken(
    running: tuple[CertificateReloader, int], tls_dir: Path, ca: KeyPair
) -> None:
    reloader, port = running
    pair = generate_serving(ca, NAMES)
    assert reloader.load_pair(pair.cert_pem, pair.key_pem) is True
    assert await asyncio.to_thread(served_serial, port, tls_dir / "ca.crt") == serial(pair)
