"""Server-side TLS contexts for kube-rdma's HTTPS endpoints.

TLS 1.2 is the floor the apiserver and kube-scheduler both speak; nothing older is offered.
A context is always built fresh and fully loaded before it is used, because loading a
mismatched pair into a live `ssl.SSLContext` breaks it for every later handshake.
"""

from __future__ import annotations

import ssl
from pathlib import Path


class TLSConfigError(Exception):
    """The certificate or key cannot be used to serve TLS."""


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """A TLS 1.2+ server context holding the pair in `cert_file` and `key_file`."""
    for path in (cert_file, key_file):
        if not path.is_file():
            raise TLSConfigError(f"cannot read {path}: file not found")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
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
    return ctx
