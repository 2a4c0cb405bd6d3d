"""Create a CA and a serving certificate signed by it, and write them to disk.

The apiserver checks the webhook's certificate against the `caBundle` of the webhook
configuration and requires a SAN for `<service>.<namespace>.svc` (CN-only certificates are
refused since Kubernetes 1.19), so the serving certificate lists every name a client inside the
cluster may use for the Service.

ECDSA P-256 is the default key: every apiserver and Go TLS stack accepts it, and it is far
cheaper than RSA in key generation and in each handshake. RSA stays available for clusters whose
policy demands it. A certificate's validity period (`not_valid_after - not_valid_before`) is
exactly the lifetime asked for; it starts a few minutes in the past for clocks behind ours.
"""

from __future__ import annotations

import datetime as dt
import enum
import ipaddress
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_LIFETIME = dt.timedelta(days=3650)
SERVING_LIFETIME = dt.timedelta(days=365)
# Tolerates clocks a little behind ours on freshly issued certificates.
BACKDATE = dt.timedelta(minutes=5)

CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"
SERVING_CERT_FILE = "tls.crt"
SERVING_KEY_FILE = "tls.key"
BUNDLE_FILES = (CA_CERT_FILE, CA_KEY_FILE, SERVING_CERT_FILE, SERVING_KEY_FILE)

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

# RFC 1123 host name label: letters, digits and hyphens, not starting or ending with a hyphen.
_DNS_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


class KeyType(enum.StrEnum):
    """The private key algorithm of a generated certificate."""

    ECDSA_P256 = "ecdsa-p256"
    RSA_2048 = "rsa-2048"
    RSA_4096 = "rsa-4096"


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


def split_names(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) among `names`, each told apart by parsing it.

    Raises ValueError naming the first entry that is neither.
    """
    dns_names: list[str] = []
    ip_addresses: list[str] = []
    for name in names:
        try:
            ip_addresses.append(str(ipaddress.ip_address(name)))
        except ValueError:
            if not is_dns_name(name):
                raise ValueError(f"{name!r} is neither an IP address nor a DNS name") from None
            dns_names.append(name)
    return dns_names, ip_addresses


def is_dns_name(name: str) -> bool:
    """Whether `name` is an RFC 1123 host name: dot-separated labels, 253 characters at most,
    and not all-numeric at the end (RFC 3696), so a mistyped IPv4 address is not taken for one."""
    labels = name.split(".")
    return (
        len(name) <= 253
        and all(_DNS_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()
    )


def new_private_key(key_type: KeyType) -> PrivateKey:
    if key_type is KeyType.ECDSA_P256:
        return ec.generate_private_key(ec.SECP256R1())
    bits = {KeyType.RSA_2048: 2048, KeyType.RSA_4096: 4096}[key_type]
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _validity_start(now: dt.datetime | None) -> dt.datetime:
    # Whole seconds: X.509 times have no fractions, so the lifetime survives encoding exactly.
    return ((now or dt.datetime.now(dt.UTC)) - BACKDATE).replace(microsecond=0)


def generate_ca(
    common_name: str,
    now: dt.datetime | None = None,
    *,
    key_type: KeyType = KeyType.ECDSA_P256,
    lifetime: dt.timedelta = CA_LIFETIME,
) -> KeyPair:
    """A self-signed CA certificate that signs serving and client certificates."""
    key = new_private_key(key_type)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = _validity_start(now)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + lifetime)
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
    *,
    key_type: KeyType = KeyType.ECDSA_P256,
    lifetime: dt.timedelta = SERVING_LIFETIME,
) -> KeyPair:
    """A server certificate for `dns_names` (and `ip_addresses`), signed by `ca`.

    It never outlives the CA: a longer `lifetime` is cut at the CA's expiry.
    """
    if not dns_names:
        raise ValueError("a serving certificate needs at least one DNS name")
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses or []]
    return _leaf(ca, dns_names[0], sans, ExtendedKeyUsageOID.SERVER_AUTH, now, key_type, lifetime)


def generate_client(
    ca: KeyPair,
    common_name: str,
    now: dt.datetime | None = None,
    *,
    key_type: KeyType = KeyType.ECDSA_P256,
    lifetime: dt.timedelta = SERVING_LIFETIME,
) -> KeyPair:
    """A client certificate for `common_name`, signed by `ca`: what a caller of a server that
    requires mutual TLS presents (the extender's `--client-ca`)."""
    return _leaf(ca, common_name, [], ExtendedKeyUsageOID.CLIENT_AUTH, now, key_type, lifetime)


def _leaf(
    ca: KeyPair,
    common_name: str,
    sans: list[x509.GeneralName],
    usage: x509.ObjectIdentifier,
    now: dt.datetime | None,
    key_type: KeyType,
    lifetime: dt.timedelta,
) -> KeyPair:
    """A certificate `ca` signs, for one extended key usage; never outliving the CA."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError("the CA key must be an ECDSA or RSA key")
    key = new_private_key(key_type)
    start = _validity_start(now)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(min(start + lifetime, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = (
        builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def existing_bundle_files(out_dir: Path) -> list[Path]:
    """The files `write_bundle` would replace in `out_dir`, in bundle order."""
    return [out_dir / name for name in BUNDLE_FILES if (out_dir / name).exists()]


def write_bundle(out_dir: Path, ca: KeyPair, serving: KeyPair) -> list[Path]:
    """Write ca.crt, ca.key, tls.crt and tls.key, replacing any that exist.

    Each file is written to a temporary file that already has its final mode (private keys:
    owner only) and then renamed over the target, so no reader ever sees a key with a wider
    mode or a half-written file. All four are written before the first rename, so a failure
    leaves the directory as it was.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    contents = {
        CA_CERT_FILE: (ca.cert_pem, 0o644),
        CA_KEY_FILE: (ca.key_pem, 0o600),
        SERVING_CERT_FILE: (serving.cert_pem, 0o644),
        SERVING_KEY_FILE: (serving.key_pem, 0o600),
    }
    staged: list[tuple[Path, Path]] = []
    try:
        for name, (data, mode) in contents.items():
            staged.append((_write_temp(out_dir, name, data, mode), out_dir / name))
        for temp, path in staged:
            os.replace(temp, path)
    finally:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
    _sync_directory(out_dir)
    return [path for _, path in staged]


def _write_temp(out_dir: Path, name: str, data: bytes, mode: int) -> Path:
    """A new file next to `name` holding `data`, with exactly `mode` from its creation."""
    # mkstemp creates the file 0600 whatever the umask; fchmod then sets the final mode
    # (widening a certificate to 0644, never a key) before any data is written.
    fd, temp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        os.unlink(temp)
        raise
    return Path(temp)


def _sync_directory(directory: Path) -> None:
    """Make the renames in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
