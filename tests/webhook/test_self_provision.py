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

from testbed.fakeapi import RESOURCES, FakeApiServer, Resource

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
            sys.executable, "-m", "kube_rdma.cli", "webhook", "--self-provision",
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
        [sys.executable, "-m", "kube_rdma.cli", "webhook", *args],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert message in json.loads(done.stderr.splitlines()[-1])["msg"]
