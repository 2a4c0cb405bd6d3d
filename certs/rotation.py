"""The certificate rotation of self-provisioned TLS as a pure state machine: what the Secret holds,
which phase of a CA rotation it is in, and the one step due next. No I/O and no clock of its own
(`now` is an argument), so every transition is tested without an apiserver; certs/provision.py
reads and writes the Secret and the webhook configuration around it.

The Secret (type kubernetes.io/tls) holds `tls.crt`, `tls.key`, `ca.crt`, `ca.key` and, during a
CA rotation, `ca-previous.crt`. The bundle is `ca.crt` followed by `ca-previous.crt`. Its states:

    (absent) --create--> STEADY
        Replicas starting together each generate a CA and a serving certificate and create the
        Secret; the apiserver lets one create win (409 AlreadyExists for the others), and the
        losers read and adopt the winner's, so every replica serves one pair.
    STEADY: one CA, the serving certificate issued by it.
        The serving certificate is renewed from the same CA when a third or less of its
        lifetime is left, when it is expired, not issued by the CA, does not cover the Service's
        names or does not match its key. When the CA has a third or less of its lifetime left:
    STEADY --rotate--> INTRODUCING: a new CA in ca.crt/ca.key, the old one in ca-previous.crt.
        The serving certificate stays the one from the old CA: the apiserver does not trust the
        new CA yet. The bundle (new + old) is synced into the webhook configuration.
    INTRODUCING --switch--> SWITCHED, once every webhook of the configuration trusts the new CA:
        a serving certificate from the new CA. (If the old serving certificate is unusable
        anyway, it is replaced by one from the new CA without waiting: there is nothing to lose.)
    SWITCHED --finish--> STEADY: ca-previous.crt is dropped from the Secret, and so from the
        bundle, once every replica serves the new certificate. Replicas take the Secret's pair
        on every check, so "a full check interval since the serving certificate was issued"
        stands for that. A serving certificate renewed in SWITCHED restarts the wait.
"""

from __future__ import annotations

import base64
import datetime as dt
import enum
from dataclasses import dataclass, replace
from typing import Final, Protocol

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

from certs.generate import (
    BACKDATE,
    CA_CERT_FILE,
    CA_KEY_FILE,
    SERVING_CERT_FILE,
    SERVING_KEY_FILE,
    KeyPair,
    KeyType,
    generate_ca,
    generate_serving,
    service_dns_names,
)
from kube_rdma.core.objects import Json

PREVIOUS_CA_CERT_FILE: Final = "ca-previous.crt"


class RotationSettings(Protocol):
    """What the state machine needs of certs.provision.ProvisionSettings."""

    @property
    def namespace(self) -> str: ...
    @property
    def service(self) -> str: ...
    @property
    def ca_lifetime(self) -> dt.timedelta: ...
    @property
    def serving_lifetime(self) -> dt.timedelta: ...
    @property
    def key_type(self) -> KeyType: ...
    @property
    def check_interval(self) -> dt.timedelta: ...


@dataclass(frozen=True)
class ServingPair:
    """What a replica serves (`cert_pem`, `key_pem`) and what the apiserver must trust."""

    cert_pem: bytes
    key_pem: bytes
    ca_bundle_pem: bytes


class ProvisionError(Exception):
    """The TLS material cannot be provisioned; the message says what to fix."""


class Phase(enum.Enum):
    """Where the Secret is in a CA rotation (see the module docstring)."""

    STEADY = "steady"
    INTRODUCING = "introducing"
    SWITCHED = "switched"


@dataclass(frozen=True)
class Material:
    """The Secret's contents: the CA, the serving pair and, while rotating, the old CA."""

    ca: KeyPair
    serving: KeyPair
    previous_ca_pem: bytes | None = None

    @property
    def bundle(self) -> bytes:
        return self.ca.cert_pem + (self.previous_ca_pem or b"")

    @property
    def pair(self) -> ServingPair:
        return ServingPair(self.serving.cert_pem, self.serving.key_pem, self.bundle)

    @property
    def phase(self) -> Phase:
        if self.previous_ca_pem is None:
            return Phase.STEADY
        if _issued_by(self.serving.cert_pem, self.ca.cert_pem):
            return Phase.SWITCHED
        return Phase.INTRODUCING


@dataclass(frozen=True)
class Step:
    """One move of the state machine: the material to write and why."""

    material: Material
    reason: str


# --- the state machine (pure) ------------------------------------------------------------------


def issue(settings: RotationSettings, now: dt.datetime) -> Material:
    """A new CA and a serving certificate from it."""
    ca = _new_ca(settings, now)
    return Material(ca, _serving(ca, settings, now))


def next_step(
    material: Material, settings: RotationSettings, now: dt.datetime, new_ca_trusted: bool
) -> Step | None:
    """What to change in the Secret now, None when nothing is due. `new_ca_trusted`: whether
    every webhook of the configuration trusts `ca.crt` (it matters in INTRODUCING only)."""
    names = service_dns_names(settings.service, settings.namespace)
    phase = material.phase
    if phase is Phase.INTRODUCING:
        defect = serving_defect(material.serving, material.previous_ca_pem or b"", names, now)
        if new_ca_trusted or defect:
            why = defect or "the webhook configuration trusts the new CA"
            return _renewed(material, settings, now, f"{why}: serving from the new CA")
        return None
    problem = serving_defect(material.serving, material.ca.cert_pem, names, now)
    if problem is None and _ageing(material.serving.cert_pem, now):
        problem = "the serving certificate has a third or less of its lifetime left"
    if phase is Phase.SWITCHED:
        if problem:
            return _renewed(material, settings, now, problem)
        if _issued_at(material.serving.cert_pem) + settings.check_interval <= now:
            reason = "every replica serves from the new CA: the old CA leaves the bundle"
            return Step(replace(material, previous_ca_pem=None), reason)
        return None
    step = _renewed(material, settings, now, problem) if problem else None
    if _ageing(material.ca.cert_pem, now):
        current = step.material if step else material
        rotated = Material(_new_ca(settings, now), current.serving, current.ca.cert_pem)
        reason = "the CA has a third or less of its lifetime left: a new CA joins the bundle"
        step = Step(rotated, f"{step.reason}; {reason}" if step else reason)
    return step


def serving_defect(
    serving: KeyPair, ca_pem: bytes, names: list[str], now: dt.datetime
) -> str | None:
    """Why `serving` cannot be served as a certificate from `ca_pem` for `names`, if it cannot."""
    try:
        cert = x509.load_pem_x509_certificate(serving.cert_pem)
        key = serialization.load_pem_private_key(serving.key_pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return "the serving certificate or key cannot be parsed"
    if not cert.not_valid_before_utc <= now < cert.not_valid_after_utc:
        return "the serving certificate is not valid now"
    if _public(key.public_key()) != _public(cert.public_key()):
        return "the serving key does not match the serving certificate"
    if not _issued_by(serving.cert_pem, ca_pem):
        return "the serving certificate is not issued by the CA"
    missing = sorted(set(names) - set(_dns_names(cert)))
    if missing:
        return f"the serving certificate does not cover {', '.join(missing)}"
    return None


def _renewed(material: Material, settings: RotationSettings, now: dt.datetime, why: str) -> Step:
    return Step(replace(material, serving=_serving(material.ca, settings, now)), why)


def _new_ca(settings: RotationSettings, now: dt.datetime) -> KeyPair:
    name = f"kube-rdma CA for {settings.service}.{settings.namespace}"
    return generate_ca(name, now, key_type=settings.key_type, lifetime=settings.ca_lifetime)


def _serving(ca: KeyPair, settings: RotationSettings, now: dt.datetime) -> KeyPair:
    names = service_dns_names(settings.service, settings.namespace)
    return generate_serving(
        ca, names, now=now, key_type=settings.key_type, lifetime=settings.serving_lifetime
    )


def _ageing(cert_pem: bytes, now: dt.datetime) -> bool:
    """Whether a third or less of the certificate's lifetime is left."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    return cert.not_valid_after_utc - now <= lifetime / 3


def _issued_at(cert_pem: bytes) -> dt.datetime:
    return x509.load_pem_x509_certificate(cert_pem).not_valid_before_utc + BACKDATE


def _issued_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    # By signature, not by name: an old and a new CA share their subject.
    try:
        x509.load_pem_x509_certificate(cert_pem).verify_directly_issued_by(
            x509.load_pem_x509_certificate(ca_pem)
        )
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _dns_names(cert: x509.Certificate) -> list[str]:
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return sans.get_values_for_type(x509.DNSName)


def _public(key: PublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def describe(cert_pem: bytes) -> str:
    """A certificate by serial and fingerprint, for logs."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    return f"serial {cert.serial_number:x} sha256 {cert.fingerprint(hashes.SHA256()).hex()[:16]}"


# --- Secret encoding ---------------------------------------------------------------------------


def secret_data(material: Material) -> dict[str, str]:
    files = {
        SERVING_CERT_FILE: material.serving.cert_pem,
        SERVING_KEY_FILE: material.serving.key_pem,
        CA_CERT_FILE: material.ca.cert_pem,
        CA_KEY_FILE: material.ca.key_pem,
    }
    if material.previous_ca_pem is not None:
        files[PREVIOUS_CA_CERT_FILE] = material.previous_ca_pem
    return {name: base64.b64encode(data).decode() for name, data in files.items()}


def parse_secret(secret: Json, what: str) -> Material:
    """The material in a Secret; raises ProvisionError when its CA cannot be used."""
    data = secret.get("data") or {}
    missing = [k for k in (CA_CERT_FILE, CA_KEY_FILE) if k not in data]
    if missing:
        raise ProvisionError(
            f"{what} has no {' or '.join(missing)}, so its certificates cannot be renewed; "
            "delete it to have kube-rdma issue a new CA"
        )
    try:
        files = {name: base64.b64decode(value, validate=True) for name, value in data.items()}
        ca = KeyPair(files[CA_CERT_FILE], files[CA_KEY_FILE])
        _check_ca(ca, files.get(PREVIOUS_CA_CERT_FILE))
    except (ValueError, TypeError, UnsupportedAlgorithm) as e:
        raise ProvisionError(
            f"{what} holds an unusable CA ({e}); delete it to have kube-rdma issue a new CA"
        ) from None
    serving = KeyPair(files.get(SERVING_CERT_FILE, b""), files.get(SERVING_KEY_FILE, b""))
    return Material(ca, serving, files.get(PREVIOUS_CA_CERT_FILE))


def _check_ca(ca: KeyPair, previous_pem: bytes | None) -> None:
    cert = x509.load_pem_x509_certificate(ca.cert_pem)
    key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if _public(key.public_key()) != _public(cert.public_key()):
        raise ValueError(f"{CA_KEY_FILE} does not match {CA_CERT_FILE}")
    if previous_pem is not None:
        x509.load_pem_x509_certificate(previous_pem)


def bundle_trusts(bundle_b64: str | None, ca_pem: bytes) -> bool:
    """Whether a base64 `caBundle` holds the CA certificate `ca_pem`."""
    try:
        trusted = x509.load_pem_x509_certificates(base64.b64decode(bundle_b64 or ""))
    except ValueError:
        return False
    return x509.load_pem_x509_certificate(ca_pem) in trusted
