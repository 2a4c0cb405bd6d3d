"""The extender called in the same process, through its wire encoding.

The emulated kube-scheduler's `ExtenderClient` builds the request bodies exactly as it sends them
over HTTP; here each body is encoded to JSON bytes, decoded by the extender's own protocol module
(extender/protocol.py), answered by the `Scheduler` that serves /filter, /prioritize, /preempt
and /bind in the app, and the answer encoded and decoded again. What HTTP adds is kept where it
changes an outcome: a call unanswered after `httpTimeout` fails, while the extender carries on
with it (a bind held at a gang barrier goes on waiting, as the server's handler does when its
client has hung up); a body the protocol refuses is the app's 400.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from extender import protocol
from extender.cluster.model import Cluster
from extender.cluster.source import BindError
from extender.scheduling import Scheduler
from kube_rdma.core.objects import Json
from kubesim.scheduler.extender_client import ExtenderError

NAME = "in-process"
"""How error messages name the extender (where kube-scheduler prints its URL)."""


class InProcessExtender:
    def __init__(
        self, scheduler: Scheduler, http_timeout: float, cluster: Cluster | None = None
    ) -> None:
        """`cluster`: the extender's model, read for the preempted gang members it holds."""
        self._scheduler = scheduler
        self._cluster = cluster
        self._timeout = http_timeout
        self._calls: set[asyncio.Task[Json | list[Json]]] = set()

    async def post(self, verb: str, body: Json) -> Any:
        """One call: the answer as kube-scheduler decodes it; raises ExtenderError."""
        call = asyncio.create_task(self._answer(verb, orjson.dumps(body)))
        self._calls.add(call)
        call.add_done_callback(self._calls.discard)
        try:
            answer = await asyncio.wait_for(asyncio.shield(call), self._timeout)
        except TimeoutError:
            raise ExtenderError(
                f"{verb} with extender at URL {NAME}/{verb}: TimeoutError"
            ) from None
        except protocol.ProtocolError:
            raise ExtenderError(
                f"failed {verb} with extender at URL {NAME}/{verb}, code 400"
            ) from None
        return orjson.loads(orjson.dumps(answer))

    async def _answer(self, verb: str, body: bytes) -> Json | list[Json]:
        scheduler = self._scheduler
        if verb == "bind":
            args = protocol.decode_binding(body)
            try:
                await scheduler.bind(args.pod_namespace, args.pod_name, args.pod_uid, args.node)
            except BindError as e:
                return protocol.binding_result(str(e))
            return protocol.binding_result()
        if verb == "preempt":
            wanted = protocol.decode_preemption(body)
            return protocol.preemption_result(scheduler.preempt(wanted.pod, wanted.victims))
        decoded = protocol.decode_args(body)
        if verb == "filter":
            outcome = scheduler.filter(decoded.pod, decoded.names)
            return protocol.filter_result(
                decoded, outcome.passed, outcome.failed, outcome.unresolvable
            )
        return protocol.host_priorities(scheduler.prioritize(decoded.pod, decoded.names))

    async def sweep(self, interval: float, idle_interval: float) -> None:
        """Gang upkeep every `interval` seconds while it has work, as the app's background task
        does: some gang has a plan, waits or holds nodes, or a gang member was preempted (its
        gang is torn down at the next sweep); every `idle_interval` while none has: then a sweep
        only forgets members that are gone, which no decision reads (a day swept every second
        would spend most of its time there)."""
        last = asyncio.get_running_loop().time()
        while True:
            await asyncio.sleep(interval)
            now = asyncio.get_running_loop().time()
            if self._busy() or now - last >= idle_interval:
                self._scheduler.sweep()
                last = now

    def _busy(self) -> bool:
        scheduler = self._scheduler
        return bool(
            scheduler.planner.plans
            or scheduler.holds
            or scheduler.contention.waiting
            or (self._cluster is not None and self._cluster.preempted)
        )
