"""The apiserver of a simulation: Nodes, Pods, PodDisruptionBudgets, Events, ConfigMaps and the
DRA objects (kubesim/simulate/dra.py) in memory, the one store that the emulated kube-scheduler
and the extender both see.

It answers the emulator's calls (kubesim/scheduler/apiserver.py's `ApiCalls`) as the apiserver does:
a list returns the objects and a resourceVersion, a watch from that version delivers every later
write once, in order; a create gets a uid; a Binding on a pod already bound is a Conflict, on a
pod that is gone a NotFound. Every write is also told to `on_pod` at once: the extender's model
(kubesim/simulate/source.py) follows the store without a watch's delay, and its binds are writes
to the store, which the emulator's informer then sees as it would a real apiserver's.

A bound pod is running at once (phase Running, `status.startTime` the bind's simulated time), as
if its kubelet started it. Pods leave through a delete, or through the `pods/eviction`
subresource (policy/v1 Eviction), which follows pkg/registry/core/pod/storage/eviction.go: a
pod that has not started (or has finished, or is being deleted) goes without a budget check;
otherwise a pod selected by more than one PodDisruptionBudget is refused (500), and by one that
allows no disruption now is refused with 429 TooManyRequests; `dry_run` (dryRun=All) checks and
changes nothing; an evicted pod gets the DisruptionTarget condition (reason
EvictionByEvictionAPI) before it is deleted, so watchers see it on the deleted object. A budget's
status is the disruption controller's (kubesim/scheduler/disruption.py), computed when read.
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta

from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import Conflict, NotFound, ServerError, TooManyRequests
from kubesim.scheduler.disruption import disruptions_allowed, selects
from kubesim.simulate.dra import DraStore

PodKey = tuple[str, str]
PodListener = Callable[[Json | None, Json | None], None]
"""(old, new): new None when the pod was deleted, old None when it was created."""
ObjectListener = Callable[[str, Json | None, Json | None], None]
"""(plural, old, new) for the objects other than pods."""
TERMINAL = frozenset({"Succeeded", "Failed"})
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""What simulated second 0 is, in the timestamps the store writes."""
EVICTION_TARGET = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "EvictionByEvictionAPI",
    "message": "Eviction API: evicting",
}


class MemoryApiserver:
    def __init__(
        self,
        nodes: Iterable[Json],
        pods: Iterable[Json],
        on_pod: PodListener,
        *,
        clock: Callable[[], float] = lambda: 0.0,
        on_object: ObjectListener | None = None,
        dra: DraStore | None = None,
    ) -> None:
        self._on_pod = on_pod
        self._dra = dra
        self._clock = clock
        self._on_object = on_object
        self.objects: dict[str, dict[PodKey, Json]] = {
            "poddisruptionbudgets": {},
            "events": {},
            "configmaps": {},
        }
        self._version = itertools.count(1)
        self._nodes: dict[PodKey, Json] = {("", n["metadata"]["name"]): n for n in nodes}
        self._pods: dict[PodKey, Json] = {_key(p): p for p in pods}
        self._uids = itertools.count(1)
        self._history: dict[str, list[tuple[int, Json]]] = {"nodes": [], "pods": []}
        self._watchers: dict[str, list[asyncio.Queue[Json]]] = {"nodes": [], "pods": []}

    def pods(self) -> Mapping[PodKey, Json]:
        return self._pods

    # The emulator's calls

    async def list(self, plural: str, field_selector: str = "") -> tuple[list[Json], str]:
        store = self._nodes if plural == "nodes" else self._pods
        items = [o for o in store.values() if _phase(o) not in TERMINAL]
        return items, str(self._current())

    async def watch(
        self, plural: str, version: str, field_selector: str = ""
    ) -> AsyncIterator[Json]:
        queue: asyncio.Queue[Json] = asyncio.Queue()
        for rv, event in self._history[plural]:
            if rv > int(version):
                queue.put_nowait(event)
        self._watchers[plural].append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._watchers[plural].remove(queue)

    async def create_pod(self, pod: Json) -> Json:
        key = _key(pod)
        if key in self._pods:
            raise Conflict(f"create pod {key[0]}/{key[1]}", 409, "AlreadyExists", "exists")
        meta = {**pod.get("metadata", {}), "uid": f"sim-{next(self._uids)}"}
        self._write(key, {**pod, "metadata": meta})
        return self._pods[key]

    async def delete_pod(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        if key not in self._pods:
            raise NotFound(f"delete pod {namespace}/{name}", 404, "NotFound", "not found")
        self._write(key, None)

    async def bind(self, namespace: str, name: str, uid: str | None, node: str) -> None:
        self.bind_now(namespace, name, uid, node, {})

    # The extender's bind

    def bind_now(
        self, namespace: str, name: str, uid: str | None, node: str, annotations: Mapping[str, str]
    ) -> None:
        """Set the pod's node and write `annotations` in one update, as a Binding does."""
        operation = f"binding {namespace}/{name} to {node}"
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise NotFound(operation, 404, "NotFound", f'pods "{name}" not found')
        meta = pod["metadata"]
        if uid and meta.get("uid") != uid:
            raise Conflict(operation, 409, "Conflict", f"the pod's uid is not {uid}")
        if bound := pod.get("spec", {}).get("nodeName"):
            message = f'pod {name} is already assigned to node "{bound}"'
            raise Conflict(operation, 409, "Conflict", message)
        if ("", node) not in self._nodes:
            raise NotFound(operation, 404, "NotFound", f'nodes "{node}" not found')
        if annotations:
            meta = {**meta, "annotations": {**(meta.get("annotations") or {}), **annotations}}
        spec = {**pod.get("spec", {}), "nodeName": node}
        status = {**pod.get("status", {}), "phase": "Running", "startTime": self.timestamp()}
        self._write((namespace, name), {**pod, "metadata": meta, "spec": spec, "status": status})

    # Preemption and eviction

    async def patch_pod_status(self, namespace: str, name: str, status: Json) -> Json:
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise NotFound(f"patch pod {namespace}/{name} status", 404, "NotFound", "not found")
        merged = {**pod.get("status", {}), **status}
        merged = {k: v for k, v in merged.items() if v is not None}
        self._write((namespace, name), {**pod, "status": merged})
        return self._pods[(namespace, name)]

    def dra(self) -> DraStore | None:
        """resource.k8s.io, served when the simulation has a DraStore."""
        return self._dra

    async def disruption_budgets(self) -> builtins.list[Json]:
        pods = list(self._pods.values())
        return [
            {**pdb, "status": {"disruptionsAllowed": disruptions_allowed(pdb, pods)}}
            for pdb in self.objects["poddisruptionbudgets"].values()
        ]

    async def create_event(self, namespace: str, event: Json) -> None:
        self.create_object("events", {**event, "metadata": {**event.get("metadata", {}),
                                                            "namespace": namespace}})  # fmt: skip

    async def evict(self, namespace: str, name: str, dry_run: bool = False) -> None:
        """POST pods/eviction; raises NotFound, TooManyRequests (a budget allows no disruption
        now) or ServerError (more than one budget selects the pod)."""
        operation = f"evict pod {namespace}/{name}"
        pod = self._pods.get((namespace, name))
        if pod is None:
            raise NotFound(operation, 404, "NotFound", f'pods "{name}" not found')
        started = _phase(pod) not in (*TERMINAL, "Pending")
        if started and not pod.get("metadata", {}).get("deletionTimestamp"):
            self._check_budgets(operation, pod)
        if dry_run:
            return
        conditions = [c for c in pod.get("status", {}).get("conditions") or []
                      if c.get("type") != "DisruptionTarget"]  # fmt: skip
        target = {**EVICTION_TARGET, "lastTransitionTime": self.timestamp()}
        await self.patch_pod_status(namespace, name, {"conditions": [*conditions, target]})
        self._write((namespace, name), None)

    def _check_budgets(self, operation: str, pod: Json) -> None:
        pdbs = [p for p in self.objects["poddisruptionbudgets"].values() if selects(p, pod)]
        if len(pdbs) > 1:
            message = (
                "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                "does not support."
            )
            raise ServerError(operation, 500, "InternalError", message)
        if pdbs and disruptions_allowed(pdbs[0], self._pods.values()) <= 0:
            budget = pdbs[0]["metadata"]["name"]
            message = (
                "Cannot evict pod as it would violate the pod's disruption budget. "
                f"The disruption budget {budget} needs more healthy pods to allow a disruption."
            )
            raise TooManyRequests(operation, 429, "TooManyRequests", message)

    # Other objects

    def create_object(self, plural: str, obj: Json) -> Json:
        """Create a PodDisruptionBudget, Event or ConfigMap (generateName honoured)."""
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("namespace", "default")
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName') or ''}{next(self._uids):05d}"
        meta |= {"uid": f"sim-{next(self._uids)}", "creationTimestamp": self.timestamp()}
        key = (meta["namespace"], meta["name"])
        store = self.objects[plural]
        if key in store:
            raise Conflict(f"create {plural} {key[0]}/{key[1]}", 409, "AlreadyExists", "exists")
        store[key] = {**obj, "metadata": meta}
        self._object_changed(plural, None, store[key])
        return store[key]

    def replace_object(self, plural: str, obj: Json) -> Json:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "default", str(meta.get("name")))
        store = self.objects[plural]
        old = store.get(key)
        if old is None:
            raise NotFound(f"replace {plural} {key[0]}/{key[1]}", 404, "NotFound", "not found")
        store[key] = {**obj, "metadata": {**old["metadata"], **meta}}
        self._object_changed(plural, old, store[key])
        return store[key]

    def delete_object(self, plural: str, namespace: str, name: str) -> None:
        old = self.objects[plural].pop((namespace, name), None)
        if old is None:
            raise NotFound(f"delete {plural} {namespace}/{name}", 404, "NotFound", "not found")
        self._object_changed(plural, old, None)

    def timestamp(self) -> str:
        """The simulated time now, as the apiserver writes times."""
        moment = EPOCH + timedelta(seconds=self._clock())
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def _object_changed(self, plural: str, old: Json | None, new: Json | None) -> None:
        if self._on_object is not None:
            self._on_object(plural, old, new)

    # Writes

    def _current(self) -> int:
        history = self._history["pods"]
        return history[-1][0] if history else 0

    def _write(self, key: PodKey, new: Json | None) -> None:
        old = self._pods.get(key)
        rv = next(self._version)
        if new is None:
            del self._pods[key]
            event = {"type": "DELETED", "object": _versioned(old or {}, rv)}
        else:
            new = self._pods[key] = _versioned(new, rv)
            event = {"type": "ADDED" if old is None else "MODIFIED", "object": new}
        self._history["pods"].append((rv, event))
        for queue in self._watchers["pods"]:
            queue.put_nowait(event)
        self._on_pod(old, new)
        if new is None and old is not None and self._dra is not None:
            self._dra.pod_deleted(old)


def _key(pod: Json) -> PodKey:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))


def _phase(obj: Json) -> object:
    return (obj.get("status") or {}).get("phase")


def _versioned(obj: Json, version: int) -> Json:
    return {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(version)}}
