"""The apiserver of a simulation: Nodes and Pods in memory, the one store that the emulated
kube-scheduler and the extender both see.

It answers the emulator's calls (kubesim/scheduler/apiserver.py's `ApiCalls`) as the apiserver does:
a list returns the objects and a resourceVersion, a watch from that version delivers every later
write once, in order; a create gets a uid; a Binding on a pod already bound is a Conflict, on a
pod that is gone a NotFound. Every write is also told to `on_pod` at once: the extender's model
(kubesim/simulate/source.py) follows the store without a watch's delay, and its binds are writes
to the store, which the emulator's informer then sees as it would a real apiserver's.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping

from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import Conflict, NotFound

PodKey = tuple[str, str]
PodListener = Callable[[Json | None, Json | None], None]
"""(old, new): new None when the pod was deleted, old None when it was created."""
TERMINAL = frozenset({"Succeeded", "Failed"})


class MemoryApiserver:
    def __init__(self, nodes: Iterable[Json], pods: Iterable[Json], on_pod: PodListener) -> None:
        self._on_pod = on_pod
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
        self._write((namespace, name), {**pod, "metadata": meta, "spec": spec})

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


def _key(pod: Json) -> PodKey:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name"))


def _phase(obj: Json) -> object:
    return (obj.get("status") or {}).get("phase")


def _versioned(obj: Json, version: int) -> Json:
    return {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(version)}}
