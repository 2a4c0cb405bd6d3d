"""Keep an aiohttp app's serving certificate current, with metrics an admin can alert on."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge

from certs.reload import CHECK_INTERVAL_SECONDS, CertificateReloader
from kube_rdma.core.tasks import cancelled


def watch_certificate(
    app: web.Application,
    tls: CertificateReloader,
    registry: CollectorRegistry,
    interval: float = CHECK_INTERVAL_SECONDS,
) -> None:
    """Re-read the certificate every `interval` seconds while `app` runs; count reloads and
    export the seconds until the serving certificate expires."""
    reloads = Counter(
        "kube_rdma_tls_reloads",
        "Serving certificate reloads, by result (loaded or rejected).",
        ["result"],
        registry=registry,
    )
    expiry = Gauge(
        "kube_rdma_tls_certificate_expiry_seconds",
        "Seconds until the serving certificate expires.",
        registry=registry,
    )
    expiry.set_function(
        lambda: (tls.not_after - dt.datetime.now(dt.UTC)).total_seconds() if tls.not_after else 0.0
    )
    tls.on_result = lambda result: reloads.labels(result).inc()

    async def ctx(_: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(tls.watch(interval))
        yield
        await cancelled(task)

    app.cleanup_ctx.append(ctx)
