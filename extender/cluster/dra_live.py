"""Following the DRA objects of a live cluster: one reflector per resource.k8s.io resource,
listed and watched at the newest version API discovery finds served (v1, else v1beta2, else
v1beta1; for DeviceTaintRules v1, else v1beta2, else v1alpha3), and not at all on a cluster
that serves none of them (before Kubernetes 1.32, or DRA disabled, or DeviceTaintRules off):
there discovery is asked again every few minutes, as for the optional CRDs.
None of them holds up the source's readiness.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from extender.cluster import dra_objects
from extender.cluster.claims import claim_names, reserved
from extender.cluster.model import Cluster
from extender.cluster.source import BindError
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.discovery import ApiResource, Discovery
from kube_rdma.kube.errors import ApiError, Conflict
from kube_rdma.kube.reflector import Reflector

log = logging.getLogger(__name__)


class ServedVersion:
    """The newest served version of one resource.k8s.io resource, once discovery finds one."""

    def __init__(
        self,
        custom_api: Any,
        discovery: Discovery,
        plural: str,
        recheck: float,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._api, self._discovery, self.plural = custom_api, discovery, plural
        self._recheck, self._sleep = recheck, sleep
        self.version: str | None = None

    async def wait(self) -> None:
        """Returns once a version is served (Reflector's `served`)."""
        absent = False
        while (version := await self._newest()) is None:
            if not absent:
                log.info(
                    "%s.%s is not served by this cluster (no DRA); looking again every %gs",
                    self.plural,
                    dra_objects.GROUP,
                    self._recheck,
                )
            absent = True
            await self._sleep(self._recheck)
        if version != self.version:
            log.info("following %s.%s/%s", self.plural, dra_objects.GROUP, version)
        self.version = version

    async def _newest(self) -> str | None:
        for version in dra_objects.versions(self.plural):
            resource = ApiResource(dra_objects.GROUP, version, self.plural)
            try:
                if await self._discovery.serves(resource):
                    return version
            except ApiError as e:
                log.debug("%s; asking again later", e)
                return None
        return None

    def list(self, *args: Any, **kwargs: Any) -> Any:
        return self._api.list_cluster_custom_object(
            dra_objects.GROUP, self.version, self.plural, *args, **kwargs
        )


def dra_reflectors(
    cluster: Cluster,
    custom_api: Any,
    discovery: Discovery,
    reflector: Callable[..., Reflector],
    recheck: float,
    sleep: Callable[[float], Awaitable[None]],
) -> tuple[list[Reflector], dict[str, ServedVersion]]:
    """The reflectors, and each resource's served version (by plural)."""
    found = []
    versions = {}
    for kind, plural in dra_objects.PLURALS.items():
        served = versions[plural] = ServedVersion(custom_api, discovery, plural, recheck, sleep)
        found.append(
            reflector(
                served.list,
                functools.partial(dra_objects.replace, cluster, kind),
                functools.partial(dra_objects.apply, cluster, kind),
                f"{plural}.{dra_objects.GROUP}",
                served=served.wait,
            )
        )
    return found, versions


class ClaimReservations:
    """Puts a pod back in its claims' `reservedFor` (extender/cluster/claims.py says why)."""

    def __init__(self, custom_api: Any, served: ServedVersion, timeout: float) -> None:
        self._api, self._served, self._timeout = custom_api, served, timeout

    async def reserve(self, pod: Json, node: str) -> None:
        """Raises BindError when a claim cannot be reserved for the pod on `node`."""
        names, unknown = claim_names(pod)
        meta = pod.get("metadata") or {}
        shown = f"pod {meta.get('namespace')}/{meta.get('name')}"
        if unknown:
            raise BindError(f"{shown}: its claims {', '.join(unknown)} are not created yet")
        if names and self._served.version is None:
            raise BindError(f"{shown} has resource claims, and the cluster serves no DRA API")
        for name in names:
            await self._reserve_one(pod, str(meta.get("namespace") or "default"), name, node)

    async def _reserve_one(self, pod: Json, namespace: str, name: str, node: str) -> None:
        what = f"ResourceClaim {namespace}/{name}"
        for _ in range(3):  # a conflict is another writer's update: read it again
            try:
                claim = await call(
                    f"get {what}",
                    self._api.get_namespaced_custom_object,
                    *self._path(namespace, name),
                    request_timeout=self._timeout,
                )
                updated = reserved(claim, pod, node)
                if isinstance(updated, str):
                    raise BindError(updated)
                if updated is claim:
                    return
                await call(
                    f"update {what} status",
                    self._api.replace_namespaced_custom_object_status,
                    *self._path(namespace, name),
                    updated,
                    request_timeout=self._timeout,
                )
                log.info("reserved %s again for its pod", what, extra={"node": node})
                return
            except Conflict:
                continue
            except ApiError as e:
                raise BindError(f"cannot reserve {what}: {e}") from e
        raise BindError(f"cannot reserve {what}: it kept changing under the update")

    def _path(self, namespace: str, name: str) -> tuple[str, str, str, str, str]:
        return dra_objects.GROUP, str(self._served.version), namespace, "resourceclaims", name
