"""The emulated scheduler's calls to a Kubernetes apiserver.

Only what kube-scheduler and a Job controller do with core/v1 Pods and Nodes: list (the items and
the list's resourceVersion), watch from a resourceVersion, create and delete a pod, and POST the
`pods/binding` subresource; and for preemption, patch a pod's status, list the
PodDisruptionBudgets and record Events. A thin adapter over kube_rdma/kube/client.py and
kubernetes-asyncio's CoreV1Api, so the emulator talks to the apiserver as the rest of kube-rdma
does: a failed call raises one of the typed errors of kube_rdma/kube/errors.py (NotFound, Gone,
..., Unreachable) naming what was asked. `connect` builds the client without credentials, for a
base URL: the test apiserver, or a real one behind `kubectl proxy`.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Final, Protocol

import aiohttp
import orjson
from kubernetes_asyncio import client

from kube_rdma.core.objects import Json
from kube_rdma.kube.client import Method, call, stream
from kube_rdma.kube.errors import NotFound, error_for
from kubesim.scheduler.dynamicresources import DraCalls, HttpDraCalls

TIMEOUT: Final = 30.0
"""Seconds for a call other than a watch (a watch has no deadline: the server ends it)."""
LISTS: Final = {"nodes": "list_node", "pods": "list_pod_for_all_namespaces"}
"""The CoreV1Api method that lists and watches each plural, across all namespaces."""
READ_BUFFER: Final = 2**21
"""Bytes aiohttp buffers of an answer, as kubernetes-asyncio sets it: room for a large object."""


class ApiCalls(Protocol):
    """The calls the emulator makes: `Apiserver` over HTTP, or the simulator's in-memory one."""

    async def list(self, plural: str, field_selector: str = "") -> tuple[list[Json], str]: ...

    def watch(self, plural: str, version: str, field_selector: str = "") -> AsyncIterator[Json]: ...

    async def create_pod(self, pod: Json) -> Json: ...

    async def delete_pod(self, namespace: str, name: str) -> None: ...

    async def bind(self, namespace: str, name: str, uid: str | None, node: str) -> None: ...

    async def patch_pod_status(self, namespace: str, name: str, status: Json) -> Json:
        """Merge `status` into the pod's status (a key set to None is removed)."""
        ...

    async def disruption_budgets(self) -> builtins.list[Json]:
        """Every PodDisruptionBudget (none when the apiserver serves no policy/v1)."""
        ...

    async def create_event(self, namespace: str, event: Json) -> None: ...

    def dra(self) -> DraCalls | None:
        """resource.k8s.io, where the apiserver serves it (None: no DRA emulated)."""
        ...


@contextlib.asynccontextmanager
async def connect(base_url: str) -> AsyncIterator[Apiserver]:
    """An `Apiserver` at `base_url`, without credentials; its connections closed at the end."""
    async with client.ApiClient(client.Configuration(host=base_url.rstrip("/"))) as api_client:
        # kubernetes-asyncio's own session trusts the environment, so before every request
        # aiohttp looks for a ~/.netrc in a worker thread: that doubles the cost of a call, and
        # the emulator sends hundreds of pods one after another to a URL that needs neither
        # credentials nor a proxy. Go's HTTP client has no per-host connection cap, and
        # kube-scheduler's binding goroutines all run at once: no cap here either.
        rest = api_client.rest_client
        await rest.pool_manager.close()
        connector = aiohttp.TCPConnector(limit=0)
        rest.pool_manager = aiohttp.ClientSession(connector=connector, read_bufsize=READ_BUFFER)
        yield Apiserver(client.CoreV1Api(api_client))


class Apiserver:
    """Pods and Nodes through `core`, a kubernetes-asyncio CoreV1Api."""

    def __init__(self, core: Any) -> None:
        self._core = core

    def dra(self) -> DraCalls | None:
        return HttpDraCalls(client.CustomObjectsApi(self._core.api_client))

    async def list(self, plural: str, field_selector: str = "") -> tuple[list[Json], str]:
        """Every object of `plural` (in all namespaces) and the list's resourceVersion."""
        body = await call(
            f"list {plural}",
            self._lister(plural),
            request_timeout=TIMEOUT,
            **_selecting(field_selector),
        )
        version = (body.get("metadata") or {}).get("resourceVersion")
        return list(body.get("items") or []), str(version)

    async def watch(
        self, plural: str, version: str, field_selector: str = ""
    ) -> AsyncGenerator[Json, None]:
        """The events after `version`, bookmarks included, until the server ends the stream.
        An ERROR event raises its typed error, as an error status does: Gone (410) when the
        version is older than the apiserver's history."""
        operation = f"watch {plural}"
        async with stream(
            operation,
            self._lister(plural),
            watch=True,
            resource_version=version,
            allow_watch_bookmarks=True,
            **_selecting(field_selector),
        ) as response:
            async for event in _lines(response):
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise error_for(operation, int(status.get("code") or 0), status)
                yield event

    async def create_pod(self, pod: Json) -> Json:
        """The pod as the apiserver stored it."""
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        name = meta.get("name") or meta.get("generateName")
        return await call(
            f"create pod {namespace}/{name}",
            self._core.create_namespaced_pod,
            namespace,
            pod,
            request_timeout=TIMEOUT,
        )

    async def delete_pod(self, namespace: str, name: str) -> None:
        await call(
            f"delete pod {namespace}/{name}",
            self._core.delete_namespaced_pod,
            name,
            namespace,
            request_timeout=TIMEOUT,
        )

    async def bind(self, namespace: str, name: str, uid: str | None, node: str) -> None:
        """Bind the pod to `node` (its UID a precondition when given), as the default binder."""
        metadata = {"name": name, "namespace": namespace} | ({"uid": uid} if uid else {})
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        await call(
            f"binding {namespace}/{name} to {node}",
            self._core.create_namespaced_pod_binding,
            name,
            namespace,
            binding,
            request_timeout=TIMEOUT,
        )

    async def patch_pod_status(self, namespace: str, name: str, status: Json) -> Json:
        return await call(
            f"patch pod {namespace}/{name} status",
            self._core.patch_namespaced_pod_status,
            name,
            namespace,
            {"status": status},
            request_timeout=TIMEOUT,
            _content_type="application/merge-patch+json",
        )

    async def disruption_budgets(self) -> builtins.list[Json]:
        policy = client.PolicyV1Api(self._core.api_client)
        try:
            body = await call(
                "list poddisruptionbudgets",
                policy.list_pod_disruption_budget_for_all_namespaces,
                request_timeout=TIMEOUT,
            )
        except NotFound:
            return []
        return list(body.get("items") or [])

    async def create_event(self, namespace: str, event: Json) -> None:
        await call(
            f"create event in {namespace}",
            self._core.create_namespaced_event,
            namespace,
            event,
            request_timeout=TIMEOUT,
        )

    def leases(self) -> Any:
        """A CoordinationV1Api on the same connection, for leader election."""
        return client.CoordinationV1Api(self._core.api_client)

    def _lister(self, plural: str) -> Method:
        method: Method = getattr(self._core, LISTS[plural])
        return method


def _selecting(field_selector: str) -> dict[str, Any]:
    return {"field_selector": field_selector} if field_selector else {}


async def _lines(response: aiohttp.ClientResponse) -> AsyncIterator[Json]:
    """The JSON lines of a watch stream, read in chunks: a chunk often holds several events, and
    a Node's line can be longer than one read."""
    buffer = b""
    async for chunk in response.content.iter_any():
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            if line.strip():
                yield orjson.loads(line)
