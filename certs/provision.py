"""In-cluster TLS for the webhook: a CA and a serving certificate kept in a Secret, and the CA
kept in the `caBundle` of the MutatingWebhookConfiguration, for years without anyone touching it.

Self-signed certificates that expire after a year, or are regenerated on every upgrade, are a
known way for a webhook to fail (REFERENCE section 5): with `failurePolicy: Fail` every training
pod is blocked, with `Ignore` pods start without RDMA. So every replica, every check interval,
reads the Secret, moves it one step along the state machine below when something is due, and
makes the webhook configuration trust the bundle the Secret says.

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

Every write is optimistic: the Secret is replaced with the resourceVersion it was read at, the
configuration patched with it, and a 409 Conflict means another replica moved first, so the
state is read again and re-checked (usually nothing is left to do). Certificates are logged by
serial number and SHA-256 fingerprint, never as PEM.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Final

import orjson
from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

from certs.generate import (
    BACKDATE,
    CA_CERT_FILE,
    CA_KEY_FILE,
    CA_LIFETIME,
    SERVING_CERT_FILE,
    SERVING_KEY_FILE,
    SERVING_LIFETIME,
    KeyPair,
    KeyType,
    generate_ca,
    generate_serving,
    service_dns_names,
)

log = logging.getLogger("kube_rdma.tls")

Json = dict[str, Any]
PREVIOUS_CA_CERT_FILE: Final = "ca-previous.crt"
SECRET_TYPE: Final = "kubernetes.io/tls"
JSON_PATCH: Final = "application/json-patch+json"
REQUEST_TIMEOUT_SECONDS: Final = 10.0
# Each attempt after the first follows a 409 from another replica's write; more than a few in a
# row means something else keeps rewriting the object.
MAX_ATTEMPTS: Final = 5
LABELS: Final = {"app.kubernetes.io/name": "kube-rdma", "app.kubernetes.io/component": "webhook"}


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class ProvisionSettings:
    """Where the TLS material lives and how long it lasts."""

    namespace: str
    service: str
    secret_name: str = "kube-rdma-webhook-tls"
    webhook_configuration: str = "kube-rdma"
    ca_lifetime: dt.timedelta = CA_LIFETIME
    serving_lifetime: dt.timedelta = SERVING_LIFETIME
    key_type: KeyType = KeyType.ECDSA_P256
    check_interval: dt.timedelta = dt.timedelta(seconds=60)
    initial_backoff: dt.timedelta = dt.timedelta(seconds=1)
    max_backoff: dt.timedelta = dt.timedelta(seconds=60)
    now: Callable[[], dt.datetime] = _utc_now

    @property
    def secret(self) -> str:
        return f"Secret {self.namespace}/{self.secret_name}"

    @property
    def configuration(self) -> str:
        return f"MutatingWebhookConfiguration {self.webhook_configuration}"


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


def issue(settings: ProvisionSettings, now: dt.datetime) -> Material:
    """A new CA and a serving certificate from it."""
    ca = _new_ca(settings, now)
    return Material(ca, _serving(ca, settings, now))


def next_step(
    material: Material, settings: ProvisionSettings, now: dt.datetime, new_ca_trusted: bool
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


def _renewed(material: Material, settings: ProvisionSettings, now: dt.datetime, why: str) -> Step:
    return Step(replace(material, serving=_serving(material.ca, settings, now)), why)


def _new_ca(settings: ProvisionSettings, now: dt.datetime) -> KeyPair:
    name = f"kube-rdma CA for {settings.service}.{settings.namespace}"
    return generate_ca(name, now, key_type=settings.key_type, lifetime=settings.ca_lifetime)


def _serving(ca: KeyPair, settings: ProvisionSettings, now: dt.datetime) -> KeyPair:
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


# --- the apiserver -----------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


async def _call(request: Awaitable[Any]) -> Json:
    """The JSON body of a call made with `_preload_content=False`; raises _Refused otherwise."""
    response = await request
    try:
        data: bytes = await response.read()
    finally:
        response.release()
    status = int(response.status)
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        body = None
    if 200 <= status < 300 and isinstance(body, dict):
        return body
    message = body.get("message") if isinstance(body, dict) else None
    if not message:
        # Never echo a 2xx body: it may be a Secret.
        message = "not a JSON object" if status < 300 else data[:200].decode(errors="replace")
    raise _Refused(status, str(message))


class Provisioner:
    """Keeps the Secret's TLS material current and the webhook configuration trusting it."""

    def __init__(
        self,
        core_api: Any,
        admission_api: Any,
        settings: ProvisionSettings,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._core = core_api
        self._admission = admission_api
        self.settings = settings
        self._sleep = sleep

    async def ensure(self) -> ServingPair:
        """The pair to serve, after creating, renewing or rotating what is due in the Secret."""
        for _ in range(MAX_ATTEMPTS):
            secret = await self._read_secret()
            now = self.settings.now()
            if secret is None:
                material = issue(self.settings, now)
                if await self._create_secret(material):
                    return material.pair
                continue  # another replica created it first: adopt theirs
            material = parse_secret(secret, self.settings.secret)
            trusted = material.phase is Phase.INTRODUCING and await self._trusted(material)
            step = next_step(material, self.settings, now, trusted)
            if step is None:
                return material.pair
            if await self._replace_secret(secret, step):
                return step.material.pair
        raise ProvisionError(
            f"{self.settings.secret} changed under each of {MAX_ATTEMPTS} attempts to update it"
        )

    async def sync_ca_bundle(self, bundle: bytes) -> bool:
        """Set `clientConfig.caBundle` of every webhook of the configuration to `bundle`; True
        when something was written."""
        encoded = base64.b64encode(bundle).decode()
        for _ in range(MAX_ATTEMPTS):
            config = await self._read_configuration()
            webhooks = config.get("webhooks") or []
            ops: list[Json] = [
                {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": encoded}
                for i, webhook in enumerate(webhooks)
                if (webhook.get("clientConfig") or {}).get("caBundle") != encoded
            ]
            if not ops:
                return False
            # Setting the resourceVersion read makes the apiserver refuse a patch over a newer
            # version with 409, so the indexes above still name the same webhooks.
            version = config["metadata"]["resourceVersion"]
            guard: Json = {"op": "replace", "path": "/metadata/resourceVersion", "value": version}
            if await self._patch_configuration([guard, *ops]):
                log.info(
                    "set the caBundle of %d webhook(s) of %s to CA %s",
                    len(ops),
                    self.settings.configuration,
                    ", ".join(map(describe, _split(bundle))),
                )
                return True
        raise ProvisionError(
            f"{self.settings.configuration} changed under each of {MAX_ATTEMPTS} attempts "
            "to set its caBundle"
        )

    async def run(
        self, on_pair: Callable[[ServingPair], None], current: ServingPair | None = None
    ) -> None:
        """Every check interval: ensure(), sync_ca_bundle(), and `on_pair` for a pair other than
        `current` (the one being served). Errors are logged and retried with backoff; it ends
        only when cancelled."""
        backoff = self.settings.initial_backoff
        while True:
            try:
                pair = await self.ensure()
                await self.sync_ca_bundle(pair.ca_bundle_pem)
                if pair != current:
                    on_pair(pair)
                    current = pair
            except Exception as e:
                log.warning(
                    "TLS provisioning failed: %s; retrying in %.0fs", e, backoff.total_seconds()
                )
                await self._sleep(backoff.total_seconds())
                backoff = min(backoff * 2, self.settings.max_backoff)
                continue
            backoff = self.settings.initial_backoff
            await self._sleep(self.settings.check_interval.total_seconds())

    # --- calls ---------------------------------------------------------------------------------

    async def _read_secret(self) -> Json | None:
        call = self._core.read_namespaced_secret(
            self.settings.secret_name, self.settings.namespace, **_OPTIONS
        )
        try:
            return await _call(call)
        except _Refused as e:
            if e.status == 404:
                return None
            raise ProvisionError(f"cannot read {self.settings.secret}: {e}") from None

    async def _create_secret(self, material: Material) -> bool:
        """Create the Secret; False when it exists already."""
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.settings.secret_name,
                "namespace": self.settings.namespace,
                "labels": dict(LABELS),
            },
            "type": SECRET_TYPE,
            "data": secret_data(material),
        }
        call = self._core.create_namespaced_secret(self.settings.namespace, body, **_OPTIONS)
        try:
            await _call(call)
        except _Refused as e:
            if e.status == 409:
                log.info("%s was created by another replica; using it", self.settings.secret)
                return False
            raise ProvisionError(f"cannot create {self.settings.secret}: {e}") from None
        log.info(
            "created %s: CA %s, serving certificate %s",
            self.settings.secret,
            describe(material.ca.cert_pem),
            describe(material.serving.cert_pem),
        )
        return True

    async def _replace_secret(self, secret: Json, step: Step) -> bool:
        """Write the step over the Secret as read; False when it changed since (409)."""
        body = dict(secret) | {"type": SECRET_TYPE, "data": secret_data(step.material)}
        call = self._core.replace_namespaced_secret(
            self.settings.secret_name, self.settings.namespace, body, **_OPTIONS
        )
        try:
            await _call(call)
        except _Refused as e:
            if e.status == 409:
                log.info("%s changed since it was read; reading it again", self.settings.secret)
                return False
            raise ProvisionError(f"cannot update {self.settings.secret}: {e}") from None
        log.info(
            "updated %s (%s): CA %s, serving certificate %s, phase %s",
            self.settings.secret,
            step.reason,
            describe(step.material.ca.cert_pem),
            describe(step.material.serving.cert_pem),
            step.material.phase.value,
        )
        return True

    async def _trusted(self, material: Material) -> bool:
        """Whether every webhook of the configuration trusts the Secret's (new) CA."""
        webhooks = (await self._read_configuration()).get("webhooks") or []
        return all(
            bundle_trusts((w.get("clientConfig") or {}).get("caBundle"), material.ca.cert_pem)
            for w in webhooks
        )

    async def _read_configuration(self) -> Json:
        name = self.settings.webhook_configuration
        call = self._admission.read_mutating_webhook_configuration(name, **_OPTIONS)
        try:
            return await _call(call)
        except _Refused as e:
            if e.status == 404:
                raise ProvisionError(
                    f"{self.settings.configuration} not found: apply "
                    "manifests/webhook/mutatingwebhookconfiguration.yaml, or pass the name of "
                    "yours, so that its caBundle can be kept current"
                ) from None
            raise ProvisionError(f"cannot read {self.settings.configuration}: {e}") from None

    async def _patch_configuration(self, patch: list[Json]) -> bool:
        call = self._admission.patch_mutating_webhook_configuration(
            self.settings.webhook_configuration, patch, _content_type=JSON_PATCH, **_OPTIONS
        )
        try:
            await _call(call)
        except _Refused as e:
            if e.status == 409:
                return False
            raise ProvisionError(f"cannot patch {self.settings.configuration}: {e}") from None
        return True


_OPTIONS: Final[Json] = {"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT_SECONDS}


def _split(bundle: bytes) -> list[bytes]:
    end = b"-----END CERTIFICATE-----\n"
    return [part + end for part in bundle.split(end) if part.strip()]
