"""`kube-rdma webhook --self-provision` end to end against the fake apiserver: it creates its
Secret, fills the caBundle, and serves the certificate the CA in that bundle verifies."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.fakeapi import RESOURCES, FakeApiServer, Resource, eventually

WEBHOOKS = {
    **RESOURCES,
    "secrets": Resource("Secret", True),
    "mutatingwebhookconfigurations": Resource(
        "MutatingWebhookConfiguration", False, "admissionregistration.k8s.io/v1"
    ),
}


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path


def configuration() -> dict[str, object]:
    entry = {
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"service": {"name": "kube-rdma-webhook", "namespace": "kube-rdma"}},
    }
    return {
        "metadata": {"name": "kube-rdma"},
        "webhooks": [
            {"name": "namespaces.kube-rdma.io", **entry},
            {"name": "pods.kube-rdma.io", **entry},
        ],
    }


async def listening_port(stderr: asyncio.StreamReader, said: list[bytes]) -> int:
    """The port in the webhook's "listening on" line; every line read kept in `said`."""
    while line := await stderr.readline():
        said.append(line)
        if found := re.search(rb"webhook listening on https://127\.0\.0\.1:(\d+)", line):
            return int(found[1])
    raise AssertionError("the webhook exited before it listened:\n" + b"".join(said).decode())


async def test_the_webhook_provisions_and_serves_its_own_certificate(tmp_path: Path) -> None:
    async with FakeApiServer(WEBHOOKS) as api:
        api.create("mutatingwebhookconfigurations", configuration())
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kube_rdma_cli", "webhook", "--self-provision",
            "--kubeconfig", str(kubeconfig(tmp_path / "kubeconfig", api.host)),
            "--own-namespace", "kube-rdma", "--host", "127.0.0.1", "--port", "0",
            stderr=subprocess.PIPE,
        )  # fmt: skip
        assert process.stderr is not None
        said: list[bytes] = []
        try:
            port = await listening_port(process.stderr, said)
            secret = api.get("secrets", "kube-rdma-webhook-tls", "kube-rdma")
            ca = base64.b64decode(secret["data"]["ca.crt"])
            bundles = {
                w["clientConfig"]["caBundle"]
                for w in api.get("mutatingwebhookconfigurations", "kube-rdma")["webhooks"]
            }
            assert bundles == {base64.b64encode(ca).decode()}
            (tmp_path / "ca.crt").write_bytes(ca)
            context = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))

            def handshake() -> str:
                with (
                    socket.create_connection(("127.0.0.1", port)) as raw,
                    context.wrap_socket(
                        raw, server_hostname="kube-rdma-webhook.kube-rdma.svc"
                    ) as tls,
                ):
                    tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    return tls.recv(4096).decode()

            assert (await asyncio.to_thread(handshake)).startswith("HTTP/1.1 200")
        finally:
            process.terminate()
            _, stderr = await process.communicate()
    assert b"BEGIN" not in b"".join(said) + stderr, "no key material in logs"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--self-provision"], "--self-provision needs the webhook's namespace"),
        (
            ["--self-provision", "--own-namespace", "n", "--tls-cert-file", "x"],
            "drop --tls-cert-file",
        ),
        ([], "give --tls-cert-file and --tls-key-file, or --self-provision"),
    ],
)
def test_tls_flags_are_checked(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    done = subprocess.run(
        [sys.executable, "-m", "kube_rdma_cli", "webhook", *args],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("kube-rdma webhook: ")
    assert message in done.stderr
    assert done.stderr.count("\n") == 1


def served_serial(port: int, trusted: Path) -> int:
    """The serial of the certificate the server presents, verified against `trusted`."""
    from cryptography import x509

    context = ssl.create_default_context(cafile=str(trusted))
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        context.wrap_socket(raw, server_hostname="kube-rdma-webhook.kube-rdma.svc") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


async def test_a_renewed_certificate_is_swapped_into_the_running_server(tmp_path: Path) -> None:
    """The provisioner renews an ageing serving certificate in the Secret; the server that
    was serving the old one presents the new one from its next handshake, without a restart."""
    import datetime as dt

    from aiohttp import web
    from cryptography import x509

    from certs.provision import ProvisionSettings
    from webhook.app import Settings
    from webhook.tls import placeholder_reloader, self_provisioned_app

    real_now = dt.datetime.now(dt.UTC)
    clock = [real_now - dt.timedelta(days=250)]  # issued then, ageing by real now
    provision = ProvisionSettings(
        namespace="kube-rdma",
        service="kube-rdma-webhook",
        check_interval=dt.timedelta(seconds=0.05),
        now=lambda: clock[0],
    )
    async with FakeApiServer(WEBHOOKS) as api:
        api.create("mutatingwebhookconfigurations", configuration())
        tls = placeholder_reloader(["kube-rdma-webhook.kube-rdma.svc"])
        config = kubeconfig(tmp_path / "kubeconfig", api.host)
        app = await self_provisioned_app(Settings(), tls, provision, config)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls.context).start()
        port = runner.addresses[0][1]
        try:

            def secret_serial() -> int:
                data = api.get("secrets", "kube-rdma-webhook-tls", "kube-rdma")["data"]
                (tmp_path / "ca.crt").write_bytes(base64.b64decode(data["ca.crt"]))
                pem = base64.b64decode(data["tls.crt"])
                return x509.load_pem_x509_certificate(pem).serial_number

            first = secret_serial()
            assert await asyncio.to_thread(served_serial, port, tmp_path / "ca.crt") == first
            clock[0] = real_now  # a third or less of its lifetime left: renewed at the next check
            await eventually(lambda: secret_serial() != first, within=30)
            renewed = secret_serial()

            async def serving_renewed() -> bool:
                served = await asyncio.to_thread(served_serial, port, tmp_path / "ca.crt")
                return served == renewed

            await eventually(serving_renewed, within=30)
        finally:
            await runner.cleanup()
    assert renewed != first
