"""Serving certificates that can be replaced while the server keeps running.

The server is given one SSLContext for its whole life. Its `sni_callback`, which OpenSSL calls at
the start of every handshake (with or without SNI), points the handshake at the current context,
so a new certificate takes effect for new connections while established ones keep theirs. A new
pair is loaded into a fresh context and checked before the swap (the key matches, the
certificate is valid now, its SANs cover the names clients use): loading a bad pair into a live
context would break it for every later handshake. A rejected pair is logged and counted, and
the previous one keeps serving.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import ipaddress
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from cryptography import x509

from certs.serving import TLSConfigError, TLSPolicy, server_context

log = logging.getLogger("kube_rdma.tls")

CHECK_INTERVAL_SECONDS = 5.0


class CertificateReloader:
    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        required_names: Iterable[str] = (),
        on_result: Callable[[str], None] = lambda result: None,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        policy: TLSPolicy | None = None,
    ) -> None:
        """`policy`: the TLS versions served and the clients accepted (certs/serving.py), the
        same for every pair loaded."""
        self.cert_file, self.key_file = cert_file, key_file
        self.policy = policy or TLSPolicy()
        self.required_names = tuple(required_names)
        self.on_result = on_result
        self._now = now
        self._digest = ""
        self.not_after: dt.datetime | None = None
        self.current = self._checked(cert_file, key_file)
        self._digest = self._files_digest()
        self.context = self._front(self.current)

    def _front(self, first: ssl.SSLContext) -> ssl.SSLContext:
        """The context the server holds: it hands every handshake to the current one."""
        front = server_context(self.cert_file, self.key_file, self.policy)

        def switch(connection: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
            connection.context = self.current

        front.sni_callback = switch
        return front

    def _files_digest(self) -> str:
        digest = hashlib.sha256()
        for path in (self.cert_file, self.key_file):
            try:
                digest.update(path.read_bytes())
            except OSError:
                digest.update(b"<unreadable>")
        return digest.hexdigest()

    def _checked(self, cert_file: Path, key_file: Path) -> ssl.SSLContext:
        """A fresh context for the pair; raises TLSConfigError saying what is wrong with it."""
        context = server_context(cert_file, key_file, self.policy)
        try:
            certificate = x509.load_pem_x509_certificate(cert_file.read_bytes())
        except (OSError, ValueError) as e:
            raise TLSConfigError(f"cannot read the certificate in {cert_file}: {e}") from e
        now = self._now()
        if certificate.not_valid_after_utc <= now:
            expired = f"{certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC"
            raise TLSConfigError(f"the certificate in {cert_file} expired at {expired}")
        if certificate.not_valid_before_utc > now:
            raise TLSConfigError(
                f"the certificate in {cert_file} is not valid before "
                f"{certificate.not_valid_before_utc:%Y-%m-%d %H:%M} UTC"
            )
        missing = [n for n in self.required_names if not _covers(certificate, n)]
        if missing:
            raise TLSConfigError(
                f"the certificate in {cert_file} does not cover {', '.join(missing)} in its SANs"
            )
        self.not_after = certificate.not_valid_after_utc
        return context

    def check(self) -> bool:
        """Load the files if they changed; True when a new pair was swapped in."""
        digest = self._files_digest()
        if digest == self._digest:
            return False
        self._digest = digest
        return self._swap(self.cert_file, self.key_file)

    def load_pair(self, cert_pem: bytes, key_pem: bytes) -> bool:
        """Swap in a pair held in memory (from a Secret); True when it was taken."""
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(cert_pem)
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(key_pem)
            return self._swap(cert, key)

    def _swap(self, cert_file: Path, key_file: Path) -> bool:
        previous = self.not_after
        try:
            fresh = self._checked(cert_file, key_file)
        except TLSConfigError as e:
            self.not_after = previous
            log.error("rejected a new serving certificate, the current one keeps serving: %s", e)
            self.on_result("rejected")
            return False
        self.current = fresh
        log.info("serving a new certificate (valid until %s)", self.not_after)
        self.on_result("loaded")
        return True

    async def watch(self, interval: float = CHECK_INTERVAL_SECONDS) -> None:
        """Check the files every `interval` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            try:
                self.check()
            except Exception:
                log.exception(
                    "checking the serving certificate failed; the current one keeps serving"
                )


def _covers(certificate: x509.Certificate, name: str) -> bool:
    try:
        sans = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return name in sans.get_values_for_type(x509.DNSName)
    return address in sans.get_values_for_type(x509.IPAddress)
