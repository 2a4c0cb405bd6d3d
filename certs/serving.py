"""Server-side TLS contexts for kube-rdma's HTTPS endpoints (the webhook's and the extender's).

TLS 1.3 by default: the apiserver and kube-scheduler (Go's crypto/tls) speak it. `TLSPolicy(
min_version="1.2")` also offers TLS 1.2, with forward-secret AEAD suites only (ECDHE with
AES-GCM or ChaCha20-Poly1305): no CBC, no static RSA key exchange, no finite-field DHE. With a
`client_ca`, every client must present a certificate that CA signed (mutual TLS).

A context is always built fresh and fully loaded before it is used, because loading a
mismatched pair into a live `ssl.SSLContext` breaks it for every later handshake.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

TLS_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"
"""The TLS 1.2 suites offered (OpenSSL's cipher string); TLS 1.3's are all AEAD."""


class TLSConfigError(Exception):
    """The certificate or key cannot be used to serve TLS."""


@dataclass(frozen=True)
class TLSPolicy:
    """What a kube-rdma HTTPS server accepts of its clients."""

    min_version: str = "1.3"
    """The oldest TLS version served: "1.3", or "1.2" (AEAD suites only)."""
    client_ca: Path | None = None
    """When set, clients must present a certificate signed by this CA (PEM)."""


def server_context(
    cert_file: Path, key_file: Path, policy: TLSPolicy | None = None
) -> ssl.SSLContext:
    """A server context holding the pair in `cert_file` and `key_file`, serving as `policy`
    (default: TLS 1.3, no client certificate asked)."""
    policy = policy or TLSPolicy()
    if policy.min_version not in TLS_VERSIONS:
        raise TLSConfigError(
            f"TLS {policy.min_version} is not served: the minimum is one of "
            + ", ".join(TLS_VERSIONS)
        )
    for path in (cert_file, key_file):
        if not path.is_file():
            raise TLSConfigError(f"cannot read {path}: file not found")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS[policy.min_version]
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    try:
        # An empty password makes OpenSSL fail on an encrypted key instead of prompting.
        ctx.load_cert_chain(certfile=str(cert_file), keyfile=str(key_file), password=lambda: b"")
    except OSError as e:
        if not isinstance(e, ssl.SSLError):
            raise TLSConfigError(f"cannot read {e.filename or cert_file}: {e.strerror}") from e
        raise TLSConfigError(
            f"cannot load certificate {cert_file} with key {key_file}: "
            f"{getattr(e, 'reason', None) or e}; check that both are PEM files, that the key is "
            "not encrypted and that it belongs to the certificate"
        ) from e
    if policy.client_ca is not None:
        _require_clients(ctx, policy.client_ca)
    return ctx


def _require_clients(ctx: ssl.SSLContext, client_ca: Path) -> None:
    """Every client must present a certificate `client_ca` signed."""
    if not client_ca.is_file():
        raise TLSConfigError(f"cannot read the client CA {client_ca}: file not found")
    try:
        ctx.load_verify_locations(cafile=str(client_ca))
    except (OSError, ValueError) as e:
        raise TLSConfigError(
            f"cannot load the client CA {client_ca}: {getattr(e, 'reason', None) or e}; it "
            "must hold PEM certificates"
        ) from e
    ctx.verify_mode = ssl.CERT_REQUIRED
