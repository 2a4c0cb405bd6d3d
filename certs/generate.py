"""Create a CA and a serving certificate signed by it.

The apiserver checks the webhook's certificate against the `caBundle` of the webhook
configuration and requires a SAN for `<service>.<namespace>.svc` (CN-only certificates are
refused since Kubernetes 1.19), so the serving certificate lists every name a client inside the
cluster may use for the Service.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_LIFETIME = dt.timedelta(days=3650)
SERVING_LIFETIME = dt.timedelta(days=365)
# Tolerates clocks a little behind ours on freshly issued certificates.
BACKDATE = dt.timedelta(minutes=5)

CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"
SERVING_CERT_FILE = "tls.crt"
SERVING_KEY_FILE = "tls.key"


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM private key."""

    cert_pem: bytes
    key_pem: bytes


def service_dns_names(service: str, namespace: str) -> list[str]:
    """Every DNS name a client in the cluster may use to reach `service` in `namespace`."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def generate_ca(common_name: str, now: dt.datetime | None = None) -> KeyPair:
    """A self-signed CA certificate allowed to sign serving certificates only."""
    now = now or dt.datetime.now(dt.UTC)
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def generate_serving(
    ca: KeyPair,
    dns_names: list[str],
    ip_addresses: list[str] | None = None,
    now: dt.datetime | None = None,
) -> KeyPair:
    """A server certificate for `dns_names` (and `ip_addresses`), signed by `ca`."""
    if not dns_names:
        raise ValueError("a serving certificate needs at least one DNS name")
    now = now or dt.datetime.now(dt.UTC)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an ECDSA key")
    key = _new_key()
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses or []]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + SERVING_LIFETIME, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def write_bundle(out_dir: Path, ca: KeyPair, serving: KeyPair) -> list[Path]:
    """Write ca.crt, ca.key, tls.crt and tls.key; private keys are readable by the owner only."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        CA_CERT_FILE: (ca.cert_pem, 0o644),
        CA_KEY_FILE: (ca.key_pem, 0o600),
        SERVING_CERT_FILE: (serving.cert_pem, 0o644),
        SERVING_KEY_FILE: (serving.key_pem, 0o600),
    }
    written = []
    for name, (data, mode) in files.items():
        path = out_dir / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        written.append(path)
    return written
