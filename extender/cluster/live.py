"""The live cluster source: Nodes and Pods listed and watched into the cluster model, and binds
that create a real `v1.Binding`. PodGroups (scheduler-plugins', Volcano's, and Kubernetes' own
scheduling.k8s.io Workloads and PodGroups in each version served) and the workloads that own
training pods (batch Jobs, PyTorchJobs, MPIJobs, JobSets, Volcano Jobs) are listed and watched
too, where API discovery finds them served (their CRDs installed; looked for again every few
minutes where they are not), and so are the DRA objects (cluster/dra_live.py).
The reflectors (kube_rdma/kube/reflector.py) keep the model equal to the apiserver's truth
through cut watches, 410 Gone, duplicated or reordered events and outages; the source is ready
while Nodes and Pods are in sync, and not while a re-list is pending or the apiserver has been
unreachable for longer than `stale_after` (docs/extender.md, "The cluster cache").

kube-scheduler only sends node names (`nodeCacheCapable`), so the model has to follow the whole
cluster by itself; it keeps of each object only what the extender reads (cluster/trim.py).
Pods are watched as kube-scheduler's own informer does, without the terminal ones (a field
selector on `status.phase`): they hold no resources, and on a big cluster they are most of the
pods. A pod that finishes then reaches the model as a DELETED event.

A bind answers kube-scheduler inside its extender `httpTimeout` (5 s by default), so every call
here carries a request timeout well below it. The model accounts a pod as soon as its bind
succeeded, and keeps it accounted while the watch still shows older states of it, as
kube-scheduler's cache "assumes" a pod it bound: otherwise the pod's GPUs would look free to the
next pod for as long as the watch lags.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client

from extender.cluster.dra_live import ClaimReservations, dra_reflectors
from extender.cluster.model import Cluster
from extender.cluster.owners import WORKLOADS, Owners, WorkloadResource
from extender.cluster.pods import PodKey, as_bound, pod_key
from extender.cluster.source import BindError, LookupFailed
from extender.cluster.trim import trim_node, trim_pod, trim_workload
from kube_rdma.core.frameworks import coscheduling, volcano
from kube_rdma.core.frameworks import kubernetes_scheduling as native
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.discovery import RECHECK_SECONDS, ApiResource, Discovery
from kube_rdma.kube.errors import ApiError, Conflict, NotFound, Unreachable
from kube_rdma.kube.reflector import INITIAL_BACKOFF_SECONDS, STALE_AFTER_SECONDS, Reflector

log = logging.getLogger(__name__)

NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"
PODGROUP_VERSIONS = (
    (coscheduling.GROUP, coscheduling.PODGROUP_VERSION),
    (volcano.SCHEDULING_GROUP, volcano.PODGROUP_VERSION),
)
NATIVE_RESOURCES = (
    *((native.WORKLOAD, v, "workloads") for v in native.WORKLOAD_VERSIONS),
    *((native.PODGROUP, v, "podgroups") for v in native.PODGROUP_VERSIONS),
    *((native.COMPOSITE, v, "compositepodgroups") for v in native.COMPOSITE_VERSIONS),
)
"""Kubernetes' own gang objects (scheduling.k8s.io), each version kube-rdma reads."""
LIST_PAGE_SIZE = 500
"""Nodes and Pods are listed in pages of this many (client-go's pager's default)."""
BIND_TIMEOUT_SECONDS = 3.0
"""Budget for the binding, below kube-scheduler's 5 s extender httpTimeout."""
READ_TIMEOUT_SECONDS = 0.5
"""Budget for reading a pod the watch has not delivered yet, before its binding: with a gang
member's barrier wait (--barrier-timeout, 4 s) it stays within kube-scheduler's 5 s."""


@dataclass(frozen=True)
class _Assumed:
    """A bind this source made that the watch has not shown yet."""

    uid: str
    node: str
    annotations: dict[str, str]


class LiveSource:
    """The cluster model fed by list + watch of Nodes and non-terminal Pods."""

    def __init__(
        self,
        core_api: Any,
        *,
        custom_api: Any = None,
        initial_backoff: float = INITIAL_BACKOFF_SECONDS,
        stale_after: float = STALE_AFTER_SECONDS,
        recheck_absent: float = RECHECK_SECONDS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        cluster: Cluster | None = None,
    ) -> None:
        """`cluster`: an empty model to fill (one with the admin's DRA settings)."""
        self._api = self.core_api = core_api
        self.cluster = cluster or Cluster()
        self.owners = Owners()
        self._assumed: dict[PodKey, _Assumed] = {}
        self._reflector = functools.partial(
            Reflector, initial_backoff=initial_backoff, stale_after=stale_after, sleep=sleep
        )
        self.node_reflector = self._reflector(
            core_api.list_node,
            self.cluster.replace_nodes,
            self._node_event,
            "nodes",
            transform=trim_node,
            page_size=LIST_PAGE_SIZE,
        )
        self.pod_reflector = self._reflector(
            functools.partial(core_api.list_pod_for_all_namespaces, field_selector=NON_TERMINAL),
            self._replace_pods,
            self._pod_event,
            "pods",
            transform=trim_pod,
            page_size=LIST_PAGE_SIZE,
        )
        self.podgroup_reflectors: list[Reflector] = []
        self._unknown_versions: Callable[[], Coroutine[Any, Any, list[str]]] | None = None
        self.owner_reflectors: list[Reflector] = []
        self.dra_reflectors: list[Reflector] = []
        self._claims: ClaimReservations | None = None
        if custom_api is not None:
            discovery = Discovery(custom_api.get_api_resources, recheck=recheck_absent, sleep=sleep)
            self._follow_optional(custom_api, discovery)
            self.dra_reflectors, versions = dra_reflectors(
                self.cluster, custom_api, discovery, self._reflector, recheck_absent, sleep
            )
            self._claims = ClaimReservations(
                custom_api, versions["resourceclaims"], READ_TIMEOUT_SECONDS
            )

    def _follow_optional(self, custom_api: Any, discovery: Discovery) -> None:
        """PodGroups hold the size of coscheduling and Volcano gangs, and the workloads that
        own training pods give theirs. Each is followed only where API discovery finds it
        served (batch Jobs always are; the rest need a CRD), and none holds up readiness."""
        for group, version in PODGROUP_VERSIONS:
            self.podgroup_reflectors.append(
                self._reflector(
                    functools.partial(
                        custom_api.list_cluster_custom_object, group, version, "podgroups"
                    ),
                    self._replace_podgroups(group),
                    self._podgroup_event,
                    f"podgroups.{group}",
                    served=discovery.waiter(ApiResource(group, version, "podgroups")),
                )
            )
        self._follow_native(custom_api, discovery)
        for resource in WORKLOADS:
            api_resource = ApiResource(resource.group, resource.version, resource.plural)
            self.owner_reflectors.append(
                self._reflector(
                    functools.partial(
                        custom_api.list_cluster_custom_object,
                        resource.group,
                        resource.version,
                        resource.plural,
                    ),
                    functools.partial(self.owners.replace, resource),
                    functools.partial(self._owner_event, resource),
                    f"{resource} {resource.version}",
                    transform=trim_workload,
                    served=discovery.waiter(api_resource),
                )
            )

    def _follow_native(self, custom_api: Any, discovery: Discovery) -> None:
        """scheduling.k8s.io Workloads and PodGroups, in every version served that kube-rdma
        reads; a served version it does not read is named once in a warning."""
        for kind, version, plural in NATIVE_RESOURCES:
            self.podgroup_reflectors.append(
                self._reflector(
                    functools.partial(
                        custom_api.list_cluster_custom_object, native.GROUP, version, plural
                    ),
                    functools.partial(self.cluster.replace_native, kind, version),
                    functools.partial(self._native_event, kind, version),
                    f"{plural}.{native.GROUP}/{version}",
                    served=discovery.waiter(ApiResource(native.GROUP, version, plural)),
                )
            )
        api_client = getattr(custom_api, "api_client", None)
        if api_client is not None:
            get_group = client.SchedulingApi(api_client).get_api_group
            self._unknown_versions = functools.partial(
                discovery.unknown_versions, get_group, native.GROUP, native.KNOWN_VERSIONS
            )

    def _native_event(self, kind: str, version: str, event: str, obj: Json) -> None:
        obj = {**obj, "kind": kind, "apiVersion": f"{native.GROUP}/{version}"}
        self._podgroup_event(event, obj)

    def ready(self) -> bool:
        """Nodes and Pods are listed and followed: no re-list pending, and the apiserver not
        unreachable for longer than the reflectors' `stale_after`."""
        return self.node_reflector.in_sync() and self.pod_reflector.in_sync()

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self.node_reflector.run())
            tasks.create_task(self.pod_reflector.run())
            optional = [*self.podgroup_reflectors, *self.owner_reflectors, *self.dra_reflectors]
            for reflector in optional:
                tasks.create_task(reflector.run())
            if self._unknown_versions is not None:
                tasks.create_task(self._unknown_versions())

    def _replace_podgroups(self, group: str) -> Callable[[list[Json]], None]:
        def replace(items: list[Json]) -> None:
            self.cluster.replace_podgroups(group, items)

        return replace

    def _podgroup_event(self, kind: str, obj: Json) -> None:
        if kind == "DELETED":
            self.cluster.delete_podgroup(obj)
        else:
            self.cluster.upsert_podgroup(obj)

    def _owner_event(self, resource: WorkloadResource, kind: str, obj: Json) -> None:
        if kind == "DELETED":
            self.owners.delete(resource, obj)
        else:
            self.owners.upsert(resource, obj)

    # Feeding the model

    def _node_event(self, kind: str, obj: Json) -> None:
        if kind == "DELETED":
            self.cluster.delete_node(str((obj.get("metadata") or {}).get("name")))
        else:
            self.cluster.upsert_node(obj)

    def _replace_pods(self, items: list[Json]) -> None:
        listed = {pod_key(o) for o in items}
        for key in set(self._assumed) - listed:
            del self._assumed[key]
        self.cluster.replace_pods([self._confirmed(o) for o in items])

    def _pod_event(self, kind: str, obj: Json) -> None:
        if kind == "DELETED":
            self._assumed.pop(pod_key(obj), None)
            self.cluster.delete_pod(pod_key(obj), obj)
        else:
            self.cluster.upsert_pod(self._confirmed(obj))

    def _confirmed(self, pod: Json) -> Json:
        """The pod as watched or listed; while that still shows it unbound after a bind this
        source made, the pod as that bind left it."""
        key = pod_key(pod)
        assumed = self._assumed.get(key)
        if assumed is None:
            return pod
        uid = (pod.get("metadata") or {}).get("uid")
        recreated = uid and assumed.uid and uid != assumed.uid
        if (pod.get("spec") or {}).get("nodeName") or recreated:
            del self._assumed[key]
            return pod
        return as_bound(pod, assumed.node, assumed.annotations)

    async def read_pod(self, namespace: str, name: str) -> Json | None:
        """One GET of the pod, for a bind or an explain that arrived before the watch delivered
        it; trimmed, not put in the model (the watch brings it in its order)."""
        try:
            pod = await call(
                f"get Pod {namespace}/{name}",
                self._api.read_namespaced_pod,
                name,
                namespace,
                request_timeout=READ_TIMEOUT_SECONDS,
            )
        except NotFound:
            return None
        except ApiError as e:
            raise LookupFailed(str(e)) from e
        return trim_pod(pod)

    async def reserve_claims(self, pod: Json, node: str) -> None:
        """Put `pod` back in its resource claims' `reservedFor` before the extender binds it
        outside a kube-scheduler bind call (extender/cluster/claims.py); raises BindError."""
        if self._claims is not None and (pod.get("spec") or {}).get("resourceClaims"):
            await self._claims.reserve(pod, node)

    # Binding

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, annotations: dict[str, str]
    ) -> None:
        """One `v1.Binding` carrying the annotations: the apiserver writes the Binding's
        annotations onto the pod in the same update that sets spec.nodeName
        (setPodHostAndAnnotations in the pod registry), so the bind is all or nothing."""
        deadline = asyncio.get_running_loop().time() + BIND_TIMEOUT_SECONDS
        request = _Bind(namespace, name, uid, node, dict(annotations), deadline)
        if bound := self._bound_node(request):
            if bound == node:
                return  # an earlier bind of this pod, whose answer was lost, went through
            raise BindError(f"cannot bind {request}: it is already bound to node {bound}")
        try:
            await call(
                "create pods/binding",
                self._api.create_namespaced_pod_binding,
                request.name,
                request.namespace,
                request.binding(),
                request_timeout=request.remaining(),
            )
        except Unreachable as e:
            # The apiserver may or may not have applied it.
            raise BindError(
                f"cannot bind {request}: no answer from the apiserver to the binding "
                f"({e.message}); the pod may be bound"
            ) from e
        except Conflict as e:
            if _assigned_node(e) != node:
                raise BindError(f"cannot bind {request}: {e}") from e
            # A retry of a bind that timed out on the caller's side but was applied: done.
            log.info("already bound", extra={"pod": f"{namespace}/{name}", "node": node})
        except ApiError as e:
            raise BindError(f"cannot bind {request}: {e}") from e
        self._assume(request)
        log.info("bound", extra={"pod": f"{namespace}/{name}", "node": node})

    def _bound_node(self, request: _Bind) -> str | None:
        """The node the model knows this pod (this uid of it) to be bound to."""
        pod = self.cluster.pod(request.namespace, request.name) or {}
        uid = (pod.get("metadata") or {}).get("uid")
        if request.uid and uid and uid != request.uid:
            return None
        node = (pod.get("spec") or {}).get("nodeName")
        return str(node) if node else None

    def _assume(self, request: _Bind) -> None:
        """Account the pod on its node now, before the watch shows the binding."""
        cached = self.cluster.pod(request.namespace, request.name)
        if cached is not None and (cached.get("spec") or {}).get("nodeName"):
            return  # the watch was quicker
        assumed = _Assumed(request.uid, request.node, request.annotations)
        self._assumed[(request.namespace, request.name)] = assumed
        if cached is not None:
            self.cluster.upsert_pod(self._confirmed(cached))


@dataclass(frozen=True)
class _Bind:
    """One bind call, with the deadline its requests share."""

    namespace: str
    name: str
    uid: str
    node: str
    annotations: dict[str, str]
    deadline: float

    def __str__(self) -> str:
        return f"pod {self.namespace}/{self.name} to node {self.node}"

    def remaining(self) -> float:
        # kubernetes-asyncio reads a timeout of 0 as "none", so never pass 0.
        return max(self.deadline - asyncio.get_running_loop().time(), 0.01)

    def binding(self) -> Json:
        metadata: Json = {"name": self.name, "namespace": self.namespace, "uid": self.uid}
        if self.annotations:
            metadata["annotations"] = self.annotations
        return {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
        }


ASSIGNED = re.compile(r'is already assigned to node "([^"]*)"')
"""The apiserver's 409 for a pod bound before (assignPod in pkg/registry/core/pod/storage)."""


def _assigned_node(error: Conflict) -> str | None:
    """The node a 409 on pods/binding says the pod is bound to; None for other conflicts (a
    stale uid)."""
    found = ASSIGNED.search(error.message)
    return found.group(1) if found else None
