"""Evicting pods, and saying so: what gang preemption does to the cluster.

Victims are evicted through the Eviction API (policy/v1), never deleted outright, so that
PodDisruptionBudgets hold: the apiserver refuses an eviction that would break one with 429
TooManyRequests. Every eviction of a preemption is first made with `dryRun=All`, so a budget
that would refuse any of them stops the preemption before a single pod is gone. Each victim
gets an Event naming its preemptor, as kube-scheduler's preemption records one ("Preempted").

`LiveDisruptions` talks to the apiserver; `ModelDisruptions` applies the same to the cluster
model alone (a snapshot, the demo), where nothing guards a budget.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any, Protocol

from extender.cluster.model import Cluster
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError, NotFound, TooManyRequests

log = logging.getLogger("kube_rdma.extender")

COMPONENT = "kube-rdma-extender"
REQUEST_TIMEOUT_SECONDS = 10.0


class Refused(Exception):
    """An eviction the apiserver would not make (a PodDisruptionBudget, most often)."""


class Disruptions(Protocol):
    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> None:
        """Evict the pod (this uid of it); raises Refused. A pod already gone is no error."""
        ...

    async def delete(self, namespace: str, name: str, uid: str) -> None:
        """Delete the pod outright: the rest of a gang whose other members were evicted."""
        ...

    async def event(self, pod: Json, reason: str, message: str) -> None:
        """Record a Normal event on the pod; failures are logged, never raised."""
        ...


def eviction(namespace: str, name: str, uid: str) -> Json:
    body: Json = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    if uid:
        body["deleteOptions"] = {"preconditions": {"uid": uid}}
    return body


def event_for(pod: Json, reason: str, message: str, now: datetime.datetime) -> Json:
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{name}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": name,
            "namespace": namespace,
            "uid": meta.get("uid"),
        },
        "reason": reason,
        "message": message,
        "type": "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class LiveDisruptions:
    def __init__(self, core_api: Any) -> None:
        self._api = core_api

    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> None:
        extra = {"dry_run": "All"} if dry_run else {}
        try:
            await call(
                f"create pods/eviction {namespace}/{name}",
                self._api.create_namespaced_pod_eviction,
                name,
                namespace,
                eviction(namespace, name, uid),
                request_timeout=REQUEST_TIMEOUT_SECONDS,
                **extra,
            )
        except NotFound:
            return
        except TooManyRequests as e:
            raise Refused(f"pod {namespace}/{name}: {e.message}") from e
        except ApiError as e:
            raise Refused(f"pod {namespace}/{name}: {e}") from e

    async def delete(self, namespace: str, name: str, uid: str) -> None:
        body = {"preconditions": {"uid": uid}} if uid else {}
        try:
            await call(
                f"delete pod {namespace}/{name}",
                self._api.delete_namespaced_pod,
                name,
                namespace,
                body=body,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except NotFound:
            return
        except ApiError as e:
            raise Refused(f"pod {namespace}/{name}: {e}") from e

    async def event(self, pod: Json, reason: str, message: str) -> None:
        body = event_for(pod, reason, message, datetime.datetime.now(datetime.UTC))
        namespace = body["metadata"]["namespace"]
        try:
            await call(
                f"create event in {namespace}",
                self._api.create_namespaced_event,
                namespace,
                body,
                request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except ApiError as e:
            log.warning("could not record event %s: %s", reason, e)


class ModelDisruptions:
    """Evictions applied to the model itself: no budgets, no events (logged instead)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> None:
        if not dry_run:
            await self.delete(namespace, name, uid)

    async def delete(self, namespace: str, name: str, uid: str) -> None:
        pod = self._cluster.pod(namespace, name)
        if pod is not None and (not uid or (pod.get("metadata") or {}).get("uid") in ("", uid)):
            self._cluster.delete_pod((namespace, name))

    async def event(self, pod: Json, reason: str, message: str) -> None:
        meta = pod.get("metadata") or {}
        log.info("%s %s/%s: %s", reason, meta.get("namespace"), meta.get("name"), message)
