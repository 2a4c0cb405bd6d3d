"""The webhook's TLS: 1.3 by default, 1.2 (with AEAD suites only) when `--tls-min-version 1.2`
asks for it: real handshakes against the real `kube-rdma webhook` process."""

from __future__ import annotations

import socket
import ssl
import sys
from pathlib import Path

import pytest

from certs.generate import generate_ca, generate_serving, write_bundle
from testbed.processes import Child


def handshake(port: int, ca: Path, version: ssl.TLSVersion, ciphers: str | None = None) -> str:
    """The version negotiated, or why the client was refused."""
    context = ssl.create_default_context(cafile=str(ca))
    context.minimum_version = context.maximum_version = version
    if ciphers is not None:
        context.set_ciphers(ciphers)
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            return str(tls.version())
    except ssl.SSLError as e:
        return f"refused: {e.reason}"


@pytest.mark.parametrize(
    ("flags", "tls12", "tls12_cbc"),
    [
        ([], False, False),
        (["--tls-min-version", "1.2"], True, False),
    ],
    ids=["default", "tls-1.2"],
)
def test_the_webhook_serves_tls_1_3_and_1_2_only_when_asked(
    tmp_path: Path, flags: list[str], tls12: bool, tls12_cbc: bool
) -> None:
    ca = generate_ca("kube-rdma test CA")
    write_bundle(tmp_path, ca, generate_serving(ca, ["localhost"], ["127.0.0.1"]))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    (tmp_path / "namespaces.yaml").write_text("kind: List\napiVersion: v1\nitems: []\n")
    argv: list[str | Path] = [sys.executable, "-m", "kube_rdma_cli", "webhook", "--port", "0"]
    argv += ["--host", "127.0.0.1"]
    argv += ["--tls-cert-file", tmp_path / "tls.crt", "--tls-key-file", tmp_path / "tls.key"]
    argv += ["--namespaces-file", tmp_path / "namespaces.yaml", *flags]
    with Child(argv) as child:
        port = int(child.stderr.wait_for(r"webhook listening on https://127\.0\.0\.1:(\d+)")[1])
        ca_file = tmp_path / "ca.crt"
        assert handshake(port, ca_file, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"
        said = handshake(port, ca_file, ssl.TLSVersion.TLSv1_2)
        assert (said == "TLSv1.2") is tls12, said
        cbc = handshake(port, ca_file, ssl.TLSVersion.TLSv1_2, "ECDHE+AES128+SHA")
        assert (cbc == "TLSv1.2") is tls12_cbc, cbc
