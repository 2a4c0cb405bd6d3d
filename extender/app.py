"""The extender's aiohttp application: decode, call the engine, encode.

`create_app(settings, source)` builds the app around a cluster source; the source's feed, the
weights reloader and (for HTTPS) nothing else run in the app's cleanup context.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
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
from extender.binding import node_settings
from extender.cluster.source import BindError, ClusterSource
from extender.engine import Engine
from extender.explain import explanation, table
from extender.gangs.identity import Gang, Singleton, gang_of
from extender.gangs.planner import GangSettings, Planner
from extender.podview import PodView, pod_view
from extender.weights import DEFAULT, Weights, parse_weights
from kube_rdma.core.config_file import WatchedFile

log = logging.getLogger("kube_rdma.extender")

LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5)


@dataclass(frozen=True)
class Settings:
    weights_file: Path | None = None
    reload_interval: float = 2.0
    gpu_resources: tuple[str, ...] = ("nvidia.com/gpu",)
    rdma_resources: tuple[str, ...] = ("rdma/*",)
    max_body_bytes: int = 16 << 20
    gangs: GangSettings = field(default_factory=GangSettings)
    sweep_interval: float = 1.0


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
    engine: Engine
    planner: Planner
    metrics: Metrics

    def view(self, pod: dict[str, Any]) -> PodView:
        return pod_view(pod, self.settings.gpu_resources, self.settings.rdma_resources)

    def gang(self, pod: dict[str, Any]) -> Gang | Singleton:
        return gang_of(pod, self.source.cluster.podgroup_size)


EXTENDER = web.AppKey("extender", Extender)
Handler = Callable[[web.Request], Awaitable[web.Response]]


def create_app(
    settings: Settings, source: ClusterSource, tls: CertificateReloader | None = None
) -> web.Application:
    """The extender app; raises ConfigError when the weights file is unusable at start-up."""
    metrics = Metrics()
    weights = WatchedFile(
        settings.weights_file,
        parse_weights,
        DEFAULT,
        "weights",
        lambda result: metrics.weight_reloads.labels(result).inc(),
    )
    engine = Engine(source.cluster, lambda: weights.current)
    planner = Planner(source.cluster, engine, settings.gangs)
    engine.locality = planner.locality
    engine.locality_active = lambda: bool(planner.plans)
    app = web.Application(client_max_size=settings.max_body_bytes)
    app[EXTENDER] = Extender(settings, source, weights, engine, planner, metrics)
    app.cleanup_ctx.append(_background)
    if tls is not None:
        watch_certificate(app, tls, metrics.registry)
    for verb, handler in (
        ("filter", handle_filter),
        ("prioritize", handle_prioritize),
        ("bind", handle_bind),
    ):
        app.router.add_post(f"/{verb}", _timed(verb, handler))
    app.router.add_get("/explain", handle_explain)
    app.router.add_get("/healthz", handle_healthz)
    app.router.add_get("/readyz", handle_readyz)
    app.router.add_get("/metrics", handle_metrics)
    return app


async def _background(app: web.Application) -> AsyncIterator[None]:
    extender = app[EXTENDER]
    tasks = [
        asyncio.create_task(extender.source.run()),
        asyncio.create_task(extender.weights.watch(extender.settings.reload_interval)),
        asyncio.create_task(_freeze_when_synced(extender.source)),
        asyncio.create_task(_sweep(extender)),
    ]
    yield
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


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
            extender.planner.sweep()
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
    extender = request.app[EXTENDER]
    args = protocol.decode_args(await request.read())
    view, gang = extender.view(args.pod), extender.gang(args.pod)
    outcome = None
    if isinstance(gang, Gang) and view.relevant:
        outcome = extender.planner.filter(view, gang, args.names)
    if outcome is None:
        key = gang.key if isinstance(gang, Gang) else None
        outcome = extender.engine.filter(view, args.names, key)
    return _json(protocol.filter_result(args, outcome.passed, outcome.failed, outcome.unresolvable))


async def handle_prioritize(request: web.Request) -> web.Response:
    extender = request.app[EXTENDER]
    args = protocol.decode_args(await request.read())
    gang = extender.gang(args.pod)
    key = gang.key if isinstance(gang, Gang) else None
    scores = extender.engine.prioritize(extender.view(args.pod), args.names, key)
    return _json(protocol.host_priorities(scores))


async def handle_bind(request: web.Request) -> web.Response:
    extender = request.app[EXTENDER]
    args = protocol.decode_binding(await request.read())
    where = f"{args.pod_namespace}/{args.pod_name} to {args.node}"
    key = (args.pod_namespace, args.pod_name)
    pod = extender.source.cluster.pod(*key)
    gang = extender.gang(pod) if pod is not None else Singleton()
    try:
        annotations = _bind_annotations(extender, args)
        if isinstance(gang, Gang):
            # All or nothing: wait for every member to reach bind, or fail them all.
            planned = pod is not None and extender.view(pod).relevant
            await extender.planner.barrier(key, gang, args.node, planned)
        await extender.source.bind(
            args.pod_namespace, args.pod_name, args.pod_uid, args.node, annotations
        )
    except BindError as e:
        log.warning("bind of %s failed: %s", where, e, extra={"node": args.node})
        return _json(protocol.binding_result(str(e)))
    if isinstance(gang, Gang):
        extender.planner.bound(key, gang, args.node)
    log.info("bound %s", where, extra={"node": args.node, **annotations})
    return _json(protocol.binding_result())


def _bind_annotations(extender: Extender, args: protocol.BindingArgs) -> dict[str, str]:
    pod = extender.source.cluster.pod(args.pod_namespace, args.pod_name)
    if pod is None:
        raise BindError(f"pod {args.pod_namespace}/{args.pod_name} is not in the extender's cache")
    view = extender.view(pod)
    if not view.node_settings:
        return {}
    node = extender.source.cluster.node(args.node)
    if node is None:
        raise BindError(f"node {args.node} is not in the extender's cache")
    return node_settings(view, node, extender.engine.rails(view, node))


async def handle_explain(request: web.Request) -> web.Response:
    extender = request.app[EXTENDER]
    namespace, name = request.query.get("namespace"), request.query.get("name")
    if not namespace or not name:
        return web.json_response({"error": "explain needs ?namespace=N&name=P"}, status=400)
    pod = extender.source.cluster.pod(namespace, name)
    if pod is None:
        return web.json_response(
            {"error": f"pod {namespace}/{name} is not in the extender's cache"}, status=404
        )
    view, gang = extender.view(pod), extender.gang(pod)
    key = gang.key if isinstance(gang, Gang) else None
    body = explanation(view, extender.engine.explain(view, key), extender.weights.current)
    body["gang"] = _gang_summary(extender, gang)
    if request.query.get("format") == "table":
        return web.Response(text=table(body))
    return _json(body)


def _gang_summary(extender: Extender, gang: Gang | Singleton) -> dict[str, Any]:
    if isinstance(gang, Singleton):
        return {"singleton": gang.reason or "the pod names no gang"}
    summary: dict[str, Any] = {"name": str(gang), "size": gang.size, "source": gang.source}
    plan = extender.planner.plans.get(gang.key)
    if plan is None:
        summary["plan"] = None
    else:
        summary["plan"] = {"domain": plan.domain, "nodes": sorted(set(plan.slots))}
    return summary


async def handle_healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")


async def handle_readyz(request: web.Request) -> web.Response:
    if not request.app[EXTENDER].source.ready():
        return web.Response(status=503, text="cluster cache not synced yet\n")
    return web.Response(text="ok\n")


async def handle_metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[EXTENDER].metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
