"""Certificates from `kube-rdma certs generate` are what the apiserver and our server need."""

from __future__ import annotations

import ipaddress
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from certs.serving import TLSConfigError, server_context
from webhook.cli import main


def test_generate_writes_ca_and_serving_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["certs", "generate", "--service", "kube-rdma-webhook", "--namespace", "kube-rdma"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == [
        str(tmp_path / n) for n in ("ca.crt", "ca.key", "tls.crt", "tls.key")
    ]
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "kube-rdma-webhook",
        "kube-rdma-webhook.kube-rdma",
        "kube-rdma-webhook.kube-rdma.svc",
        "kube-rdma-webhook.kube-rdma.svc.cluster.local",
    ]
    assert sans.get_values_for_type(x509.IPAddress) == []
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    for key in ("ca.key", "tls.key"):
        assert stat.S_IMODE((tmp_path / key).stat().st_mode) == 0o600


def test_localhost_adds_loopback_names(tmp_path: Path) -> None:
    args = ["certs", "generate", "--service", "s", "--namespace", "n", "--out", str(tmp_path)]
    assert main([*args, "--localhost"]) == 0
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName)[-1] == "localhost"
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_server_context_is_tls12_or_newer(cert_dir: Path) -> None:
    ctx = server_context(cert_dir / "tls.crt", cert_dir / "tls.key")
    assert ctx.minimum_version is ssl.TLSVersion.TLSv1_2


def test_mismatched_key_is_rejected(tmp_path: Path, cert_dir: Path) -> None:
    other = tmp_path / "other"
    main(["certs", "generate", "--service", "s", "--namespace", "n", "--out", str(other)])
    with pytest.raises(TLSConfigError, match="and that it belongs to the certificate"):
        server_context(cert_dir / "tls.crt", other / "tls.key")


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TLSConfigError, match=r"tls\.crt: file not found"):
        server_context(tmp_path / "tls.crt", tmp_path / "tls.key")


def test_encrypted_key_is_rejected_without_prompting(tmp_path: Path, cert_dir: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key((cert_dir / "tls.key").read_bytes(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    (tmp_path / "tls.key").write_bytes(encrypted)
    with pytest.raises(TLSConfigError, match="that the key is not encrypted"):
        server_context(cert_dir / "tls.crt", tmp_path / "tls.key")
