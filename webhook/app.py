"""The webhook's aiohttp application: transport only, the review semantics live elsewhere.

`create_app(settings)` builds everything the process needs; clients, watchers and the profile
reloader are started and stopped by the app's cleanup context, never at import time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from certs.reload import CertificateReloader
from certs.watch import watch_certificate
from kube_rdma.core.tasks import cancelled
from webhook import review
from webhook.admission import Admitter, Decision
from webhook.dra.source import DraSource, LiveDra, StaticDra
from webhook.metrics import Metrics
from webhook.namespaces import LiveNamespaces, NamespaceSource, StaticNamespaces
from webhook.podsecurity import Level
from webhook.profile_store import ProfileStore

log = logging.getLogger("kube_rdma.webhook")

DEFAULT_MAX_BODY_BYTES = 6 << 20
SHUTDOWN_TIMEOUT_SECONDS = 10.0
"""How long SIGTERM waits for reviews in flight (aiohttp may wait as long again for a cancelled
one). With the Deployment's 5-second preStop sleep that stays below its
terminationGracePeriodSeconds (30), so the kubelet never has to SIGKILL a replica mid-review."""


@dataclass(frozen=True)
class Settings:
    profiles_file: Path | None = None
    namespaces_file: Path | None = None
    kubeconfig: Path | None = None
    in_cluster: bool = False
    own_namespace: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    reload_interval: float = 2.0
    default_pod_security: Level = Level.PRIVILEGED
    """The level of namespaces without an enforce label (the cluster's PSA default)."""
    dra_file: Path | None = None
    """Without a cluster: the ResourceClaimTemplates, ResourceClaims and DeviceClasses."""


METRICS = web.AppKey("metrics", Metrics)
PROFILES = web.AppKey("profiles", ProfileStore)
NAMESPACES = web.AppKey("namespaces", NamespaceSource)
ADMITTER = web.AppKey("admitter", Admitter)
SETTINGS = web.AppKey("settings", Settings)


def create_app(
    settings: Settings,
    namespaces: NamespaceSource | None = None,
    tls: CertificateReloader | None = None,
    dra: DraSource | None = None,
) -> web.Application:
    """The webhook app; raises ProfileError when the profile file is unusable at start-up.

    `namespaces` replaces the namespace source that `settings` would select, and `dra` with it
    the DRA objects (default: those of `settings.dra_file`); `tls`, the serving certificate,
    is then re-read while the app runs.
    """
    app = web.Application(client_max_size=settings.max_body_bytes)
    metrics = Metrics()
    profiles = ProfileStore(
        settings.profiles_file,
        lambda result: metrics.profile_reloads.labels(result).inc(),
        metrics.set_profile_warnings,
    )
    app[SETTINGS] = settings
    app[METRICS] = metrics
    app[PROFILES] = profiles
    if namespaces is None:
        app.cleanup_ctx.append(_namespaces_ctx(settings))
    else:
        _install(app, namespaces, dra or _static_dra(settings), settings)
    app.cleanup_ctx.append(_reload_ctx(settings))
    if tls is not None:
        watch_certificate(app, tls, metrics.registry)
    app.on_shutdown.append(_stopping)
    app.router.add_post("/mutate", handle_mutate)
    app.router.add_get("/healthz", handle_healthz)
    app.router.add_get("/readyz", handle_readyz)
    app.router.add_get("/metrics", handle_metrics)
    return app


async def _stopping(app: web.Application) -> None:
    log.info("stopped accepting connections; finishing the reviews in flight")


def _namespaces_ctx(settings: Settings) -> Any:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        if settings.kubeconfig is None and not settings.in_cluster:
            source: NamespaceSource = (
                StaticNamespaces.from_file(settings.namespaces_file)
                if settings.namespaces_file
                else StaticNamespaces()
            )
            _install(app, source, _static_dra(settings), settings)
            yield
            return
        from kubernetes_asyncio import client

        from kube_rdma.kube.kubeconfig import load_config

        await load_config(None if settings.in_cluster else settings.kubeconfig, server=True)
        async with client.ApiClient() as api:
            live = LiveNamespaces(client.CoreV1Api(api))
            _install(app, live, LiveDra(client.CustomObjectsApi(api)), settings)
            task = asyncio.create_task(live.reflector.run())
            yield
            await cancelled(task)

    return ctx


def _static_dra(settings: Settings) -> DraSource:
    return StaticDra.from_file(settings.dra_file) if settings.dra_file else StaticDra()


def _install(
    app: web.Application, source: NamespaceSource, dra: DraSource, settings: Settings
) -> None:
    app[NAMESPACES] = source
    app[ADMITTER] = Admitter(
        app[PROFILES], source, settings.own_namespace, settings.default_pod_security, dra
    )


def _reload_ctx(settings: Settings) -> Any:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(app[PROFILES].watch(settings.reload_interval))
        yield
        await cancelled(task)

    return ctx


async def handle_mutate(request: web.Request) -> web.Response:
    started = time.perf_counter()
    metrics = request.app[METRICS]
    try:
        admission = review.decode(await request.read())
        decision = await _decide(request.app[ADMITTER], admission)
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[SETTINGS].max_body_bytes
        message = f"body larger than the {limit}-byte limit (--max-body-bytes)"
        return _bad_request(metrics, 413, message)
    except review.BadRequest as e:
        return _bad_request(metrics, e.status, str(e))
    elapsed = time.perf_counter() - started
    metrics.reviews.labels(decision.outcome, decision.profile).inc()
    metrics.latency.labels(decision.outcome, decision.profile).observe(elapsed)
    _log_review(admission, decision, elapsed)
    return web.Response(body=orjson.dumps(decision.response), content_type="application/json")


async def _decide(admitter: Admitter, admission: dict[str, Any]) -> Decision:
    """The admitter's decision; anything unexpected becomes a denial carrying the same uid."""
    try:
        return await admitter.review(admission)
    except review.BadRequest:
        raise
    except Exception as e:
        log.exception("review %s failed", admission["uid"], extra={"uid": admission["uid"]})
        message = f"kube-rdma webhook internal error ({type(e).__name__}); see the webhook's logs"
        return Decision(review.errored(admission["uid"], message), "error")


def _log_review(admission: dict[str, Any], decision: Decision, elapsed: float) -> None:
    response = decision.response["response"]
    fields: dict[str, Any] = {
        "uid": admission["uid"],
        "pod": _pod_name(admission),
        "outcome": decision.outcome,
        "profile": decision.profile,
        "ms": round(elapsed * 1000, 3),
        "warnings": len(response.get("warnings") or ()),
    }
    if "status" in response:
        fields["reason"] = response["status"]["message"]
    log.info("review", extra=fields)


def _pod_name(admission: dict[str, Any]) -> str:
    """namespace/name, or namespace/generateName* for pods a controller creates; read
    defensively, since the log line is written for malformed reviews too."""
    obj = admission.get("object")
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    name = admission.get("name") or meta.get("name") or f"{meta.get('generateName') or ''}*"
    return f"{admission.get('namespace') or meta.get('namespace')}/{name}"


def _bad_request(metrics: Metrics, status: int, message: str) -> web.Response:
    metrics.bad_requests.labels(str(status)).inc()
    log.warning("rejected /mutate request: %s", message, extra={"status": status})
    return web.json_response({"error": message}, status=status)


async def handle_healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")


async def handle_readyz(request: web.Request) -> web.Response:
    source = request.app.get(NAMESPACES)
    if source is None or not source.ready():
        return web.Response(status=503, text="namespace cache not synced yet\n")
    return web.Response(text="ok\n")


async def handle_metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
