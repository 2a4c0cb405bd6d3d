"""In-cluster TLS for the webhook: a CA and a serving certificate kept in a Secret, and the CA
kept in the `caBundle` of the MutatingWebhookConfiguration, for years without anyone touching it.

Self-signed certificates that expire after a year, or are regenerated on every upgrade, are a
known way for a webhook to fail: with `failurePolicy: Fail` every training pod is blocked, with
`Ignore` pods start without RDMA. So every replica, every check interval,
reads the Secret, moves it one step along the state machine of certs/rotation.py when something
is due, and makes the webhook configuration trust the bundle the Secret says. This module is the
apiserver side of that: the reads, the writes and the loop; what to write is decided in
certs/rotation.py, without I/O.

Every write is optimistic: the Secret is replaced with the resourceVersion it was read at, the
configuration patched with it, and a 409 Conflict means another replica moved first, so the
state is read again and re-checked (usually nothing is left to do). Certificates are logged by
serial number and SHA-256 fingerprint, never as PEM.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from certs.generate import CA_LIFETIME, SERVING_LIFETIME, KeyType
from certs.rotation import (
    PREVIOUS_CA_CERT_FILE,
    Material,
    Phase,
    ProvisionError,
    ServingPair,
    Step,
    bundle_trusts,
    describe,
    issue,
    next_step,
    parse_secret,
    secret_data,
    serving_defect,
)
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError, Conflict, NotFound

__all__ = [
    "PREVIOUS_CA_CERT_FILE",
    "Material",
    "Phase",
    "ProvisionError",
    "ProvisionSettings",
    "Provisioner",
    "ServingPair",
    "Step",
    "bundle_trusts",
    "describe",
    "issue",
    "next_step",
    "parse_secret",
    "secret_data",
    "serving_defect",
]

log = logging.getLogger("kube_rdma.tls")

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
    # A 404 or 409 is part of the logic; any other failure ends the attempt as a ProvisionError.

    async def _read_secret(self) -> Json | None:
        settings = self.settings
        try:
            return await call(
                f"read {settings.secret}",
                self._core.read_namespaced_secret,
                settings.secret_name,
                settings.namespace,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except NotFound:
            return None
        except ApiError as e:
            raise ProvisionError(str(e)) from e

    async def _create_secret(self, material: Material) -> bool:
        """Create the Secret; False when it exists already."""
        settings = self.settings
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": settings.secret_name,
                "namespace": settings.namespace,
                "labels": dict(LABELS),
            },
            "type": SECRET_TYPE,
            "data": secret_data(material),
        }
        try:
            await call(
                f"create {settings.secret}",
                self._core.create_namespaced_secret,
                settings.namespace,
                body,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except Conflict:
            log.info("%s was created by another replica; using it", settings.secret)
            return False
        except ApiError as e:
            raise ProvisionError(str(e)) from e
        log.info(
            "created %s: CA %s, serving certificate %s",
            settings.secret,
            describe(material.ca.cert_pem),
            describe(material.serving.cert_pem),
        )
        return True

    async def _replace_secret(self, secret: Json, step: Step) -> bool:
        """Write the step over the Secret as read; False when it changed since (409)."""
        settings = self.settings
        body = dict(secret) | {"type": SECRET_TYPE, "data": secret_data(step.material)}
        try:
            await call(
                f"update {settings.secret}",
                self._core.replace_namespaced_secret,
                settings.secret_name,
                settings.namespace,
                body,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except Conflict:
            log.info("%s changed since it was read; reading it again", settings.secret)
            return False
        except ApiError as e:
            raise ProvisionError(str(e)) from e
        log.info(
            "updated %s (%s): CA %s, serving certificate %s, phase %s",
            settings.secret,
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
        settings = self.settings
        try:
            return await call(
                f"read {settings.configuration}",
                self._admission.read_mutating_webhook_configuration,
                settings.webhook_configuration,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except NotFound:
            raise ProvisionError(
                f"{settings.configuration} not found: apply "
                "manifests/webhook/mutatingwebhookconfiguration.yaml, or pass the name of "
                "yours, so that its caBundle can be kept current"
            ) from None
        except ApiError as e:
            raise ProvisionError(str(e)) from e

    async def _patch_configuration(self, patch: list[Json]) -> bool:
        settings = self.settings
        try:
            await call(
                f"patch {settings.configuration}",
                self._admission.patch_mutating_webhook_configuration,
                settings.webhook_configuration,
                patch,
                _content_type=JSON_PATCH,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except Conflict:
            return False
        except ApiError as e:
            raise ProvisionError(str(e)) from e
        return True


def _split(bundle: bytes) -> list[bytes]:
    end = b"-----END CERTIFICATE-----\n"
    return [part + end for part in bundle.split(end) if part.strip()]
