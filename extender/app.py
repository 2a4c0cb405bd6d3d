"""The extender's aiohttp application: decode, call the scheduler (extender/scheduling.py), encode.

`create_app(settings, source)` builds the app around a cluster source; the source's feed, the
weights reloader and (for HTTPS) nothing else run in the app's cleanup context. On shutdown the
binds held at gang barriers fail first, so that they do not hold the shutdown up.

The verbs' app serves no metrics: `/metrics` (with `/healthz` and `/readyz`) is served by
`metrics_app` on a port of its own (`serve_metrics`), so that whoever may read the metrics (a
port-forward, a scraper) does not reach the verbs.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

from certs.reload import CertificateReloader
from certs.watch import watch_certificate
from extender import protocol
from extender.book.records import PlanRecords
from extender.cluster.disruptions import Disruptions
from extender.cluster.nominations import Nominations
from extender.cluster.source import BindError, ClusterSource, LookupFailed
from extender.contention_metrics import ContentionCollector
from extender.explain import table
from extender.gangs.planner import GangSettings, Planner
from extender.preemption.contention import ContentionSettings
from extender.scheduling import STARTING, NotReady, Scheduler
from extender.weights import DEFAULT, Weights, parse_weights
from kube_rdma.core.config_file import WatchedFile
from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS
from kube_rdma.core.tasks import cancelled

log = logging.getLogger("kube_rdma.extender")

SHUTDOWN_TIMEOUT_SECONDS = 4.0
"""How long SIGTERM waits for calls in flight, binds to the apiserver included (aiohttp may wait
as long again for a cancelled one): below the Deployment's terminationGracePeriodSeconds (10)."""
LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5)


@dataclass(frozen=True)
class Settings:
    weights_file: Path | None = None
    reload_interval: float = 2.0
    gpu_resources: tuple[str, ...] = ("nvidia.com/gpu",)
    rdma_resources: tuple[str, ...] = DEFAULT_RDMA_PATTERNS
    max_body_bytes: int = 16 << 20
    gangs: GangSettings = field(default_factory=GangSettings)
    sweep_interval: float = 1.0
    require_acceptance: bool = False
    """Only nodes labelled kube-rdma.io/acceptance=passed take RDMA pods."""
    contention: ContentionSettings = field(default_factory=ContentionSettings)
    own_pods_only: bool = False
    """/bind binds only pods of `contention.scheduler_name` (kube-rdma extender's
    --scheduler-name); in-process uses (the simulator, tests) may leave it off."""


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter(
            "kube_rdma_extender_calls",
            "Extender calls answered, by verb and result.",
            ["verb", "result"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "kube_rdma_extender_call_duration_seconds",
            "Time to answer an extender call, by verb.",
            ["verb"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.weight_reloads = Counter(
            "kube_rdma_weights_reloads",
            "Weights file reloads, by result (loaded or rejected).",
            ["result"],
            registry=self.registry,
        )


@dataclass
class Extender:
    """Everything a handler needs."""

    settings: Settings
    source: ClusterSource
    weights: WatchedFile[Weights]
    scheduler: Scheduler
    metrics: Metrics

    @property
    def planner(self) -> Planner:
        """The gang plans, for audits and tests."""
        return self.scheduler.planner


EXTENDER = web.AppKey("extender", Extender)
Handler = Callable[[web.Request], Awaitable[web.Response]]


def create_app(
    settings: Settings,
    source: ClusterSource,
    tls: CertificateReloader | None = None,
    records: PlanRecords | None = None,
    disruptions: Disruptions | None = None,
    nominations: Nominations | None = None,
) -> web.Application:
    """The extender app, its gang plans written to `records` (default: kept in memory only),
    its gang preemptions made through `disruptions` (default: none made), its gangs' members
    nominated to their planned nodes through `nominations` (default: none); raises ConfigError
    when the weights file is unusable at start-up."""
    metrics = Metrics()
    weights = WatchedFile(
        settings.weights_file,
        parse_weights,
        DEFAULT,
        "weights",
        lambda result: metrics.weight_reloads.labels(result).inc(),
    )
    scheduler = Scheduler(
        source,
        lambda: weights.current,
        settings.gangs,
        settings.gpu_resources,
        settings.rdma_resources,
        records,
        settings.require_acceptance,
        contention=settings.contention,
        disruptions=disruptions,
        own_pods_only=settings.own_pods_only,
        nominations=nominations,
    )
    metrics.registry.register(ContentionCollector(scheduler, time.monotonic))
    app = web.Application(client_max_size=settings.max_body_bytes)
    app[EXTENDER] = Extender(settings, source, weights, scheduler, metrics)
    app.cleanup_ctx.append(_background)
    app.on_shutdown.append(_release_barriers)
    if tls is not None:
        watch_certificate(app, tls, metrics.registry)
    for verb, handler in (
        ("filter", handle_filter),
        ("prioritize", handle_prioritize),
        ("bind", handle_bind),
        ("preempt", handle_preempt),
    ):
        app.router.add_post(f"/{verb}", _timed(verb, handler))
    app.router.add_get("/explain", handle_explain)
    app.router.add_get("/healthz", handle_healthz)
    app.router.add_get("/readyz", handle_readyz)
    return app


def metrics_app(app: web.Application) -> web.Application:
    """The app of the metrics port, for the extender `app`: /metrics, /healthz and /readyz,
    nothing that schedules or binds."""
    metrics = web.Application()
    metrics[EXTENDER] = app[EXTENDER]
    metrics.router.add_get("/metrics", handle_metrics)
    metrics.router.add_get("/healthz", handle_healthz)
    metrics.router.add_get("/readyz", handle_readyz)
    return metrics


def serve_metrics(app: web.Application, sock: socket.socket) -> None:
    """Serve `metrics_app(app)` on `sock` (plain HTTP) for as long as `app` runs."""

    async def context(app: web.Application) -> AsyncIterator[None]:
        runner = web.AppRunner(metrics_app(app), access_log=None)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        yield
        await runner.cleanup()

    app.cleanup_ctx.append(context)


async def _background(app: web.Application) -> AsyncIterator[None]:
    extender = app[EXTENDER]
    tasks = [
        asyncio.create_task(extender.source.run()),
        asyncio.create_task(extender.weights.watch(extender.settings.reload_interval)),
        asyncio.create_task(_freeze_when_synced(extender.source)),
        asyncio.create_task(_sweep(extender)),
        asyncio.create_task(extender.scheduler.records.run()),
    ]
    yield
    await cancelled(*tasks)


async def _release_barriers(app: web.Application) -> None:
    """On SIGTERM (aiohttp's shutdown, before it waits for the requests in flight): the binds
    held at a gang barrier fail at once instead of holding the shutdown up; kube-scheduler
    retries them with whichever extender serves next, which plans the gang again."""
    await app[EXTENDER].scheduler.shutdown()


async def _freeze_when_synced(source: ClusterSource) -> None:
    """Move the synced cluster cache out of the cyclic GC's sight: with 5,000 Nodes it is
    millions of objects, and a full collection scanning them pauses calls for many ms."""
    while not source.ready():  # noqa: ASYNC110 - the sources expose no event to wait on
        await asyncio.sleep(0.1)
    gc.collect()
    gc.freeze()
    # Each call allocates thousands of short-lived objects (5,000 names, their verdicts); with
    # the default threshold of 700 the collector runs many times per call.
    gc.set_threshold(100_000, 50, 100)


async def _sweep(extender: Extender) -> None:
    """Expire, repair and release gang plans as time passes and pods come and go."""
    while True:
        await asyncio.sleep(extender.settings.sweep_interval)
        try:
            extender.scheduler.sweep()
        except Exception:
            log.exception("gang plan upkeep failed")


def _timed(verb: str, handler: Handler) -> Handler:
    """Metrics and the 400 answer for a malformed body, around one verb's handler."""

    async def timed(request: web.Request) -> web.Response:
        metrics = request.app[EXTENDER].metrics
        started = time.perf_counter()
        try:
            response = await handler(request)
            result = "ok"
        except protocol.ProtocolError as e:
            log.warning("rejected /%s request: %s", verb, e)
            response, result = web.json_response({"error": str(e)}, status=400), "bad-request"
        except web.HTTPRequestEntityTooLarge:
            message = f"body larger than {request.app[EXTENDER].settings.max_body_bytes} bytes"
            response, result = web.json_response({"error": message}, status=413), "bad-request"
        except Exception as e:
            log.exception("/%s failed", verb)
            message = f"kube-rdma extender internal error ({type(e).__name__}); see its logs"
            response, result = web.json_response({"error": message}, status=500), "error"
        metrics.calls.labels(verb, result).inc()
        metrics.latency.labels(verb).observe(time.perf_counter() - started)
        return response

    return timed


def _json(body: Any) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def handle_filter(request: web.Request) -> web.Response:
    args = protocol.decode_args(await request.read())
    try:
        outcome = request.app[EXTENDER].scheduler.filter(args.pod, args.names)
    except NotReady as e:
        return _json(protocol.filter_result(args, [], {}, {}, str(e)))
    return _json(protocol.filter_result(args, outcome.passed, outcome.failed, outcome.unresolvable))


async def handle_prioritize(request: web.Request) -> web.Response:
    args = protocol.decode_args(await request.read())
    scores = request.app[EXTENDER].scheduler.answer_scores(args.pod, args.names)
    return web.Response(body=scores.json, content_type="application/json")


async def handle_bind(request: web.Request) -> web.Response:
    args = protocol.decode_binding(await request.read())
    where = f"{args.pod_namespace}/{args.pod_name} to {args.node}"
    scheduler = request.app[EXTENDER].scheduler
    try:
        annotations = await scheduler.bind(
            args.pod_namespace, args.pod_name, args.pod_uid, args.node
        )
    except BindError as e:
        log.warning("bind of %s failed: %s", where, e, extra={"node": args.node})
        return _json(protocol.binding_result(str(e)))
    log.info("bound %s", where, extra={"node": args.node, **annotations})
    return _json(protocol.binding_result())


async def handle_preempt(request: web.Request) -> web.Response:
    args = protocol.decode_preemption(await request.read())
    scheduler = request.app[EXTENDER].scheduler
    if not scheduler.ready():
        return web.json_response({"error": STARTING}, status=503)
    return _json(protocol.preemption_result(scheduler.preempt(args.pod, args.victims)))


async def handle_explain(request: web.Request) -> web.Response:
    namespace, name = request.query.get("namespace"), request.query.get("name")
    if not namespace or not name:
        return web.json_response({"error": "explain needs ?namespace=N&name=P"}, status=400)
    scheduler = request.app[EXTENDER].scheduler
    try:
        pod = await scheduler.find_pod(namespace, name)
    except LookupFailed as e:
        message = f"pod {namespace}/{name} is not in the extender's cache yet and could not be read"
        return web.json_response({"error": f"{message}: {e}"}, status=503)
    if pod is None:
        return web.json_response({"error": f"pod {namespace}/{name} does not exist"}, status=404)
    body = scheduler.explain_pod(pod)
    if request.query.get("format") == "table":
        return web.Response(text=table(body))
    return _json(body)


async def handle_healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")


async def handle_readyz(request: web.Request) -> web.Response:
    if not request.app[EXTENDER].scheduler.ready():
        return web.Response(status=503, text="cluster cache not synced yet\n")
    return web.Response(text="ok\n")


async def handle_metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[EXTENDER].metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
