"""Whether the apiserver serves an optional resource, found through API discovery.

Some resources kube-rdma follows exist only where a CRD is installed: the PodGroups of Volcano
and of scheduler-plugins, the PyTorchJobs, MPIJobs and JobSets that own training pods. Listing
one that is not installed answers 404 on every try, which says nothing new after the first.
So before listing such a resource a reflector asks discovery (GET /apis/GROUP/VERSION, the
APIResourceList kubectl reads too) and, while the resource is absent, says so once at info level
and looks again every `recheck` seconds (5 minutes by default): installing the CRD later is
picked up within that time, without a restart. A discovery call that fails for another reason
(the apiserver down) is retried sooner, with the reflector's own backoff left to the list.

Some groups change shape from one version to the next (Kubernetes' own `scheduling.k8s.io`
Workloads and PodGroups: v1alpha1 in 1.35, v1alpha2 in 1.36, v1alpha3 and v1beta1 in 1.37): a
reader follows each version it knows, and `versions` (GET /apis/GROUP, the APIGroup) tells the
versions served; `unknown_versions` says once, as a warning, which ones it cannot read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final

from kube_rdma.kube.client import Method, call
from kube_rdma.kube.errors import ApiError, NotFound

log = logging.getLogger(__name__)

RECHECK_SECONDS: Final = 300.0
"""How often an absent resource is looked for again."""
RETRY_SECONDS: Final = 5.0
"""How soon discovery is asked again after it failed to answer."""
TIMEOUT_SECONDS: Final = 10.0


@dataclass(frozen=True)
class ApiResource:
    """One REST collection of an API group, e.g. podgroups of scheduling.volcano.sh/v1beta1."""

    group: str
    version: str
    plural: str

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}/{self.version}"


class Discovery:
    """Asks the apiserver which resources an API group version serves."""

    def __init__(
        self,
        get_api_resources: Method,
        *,
        recheck: float = RECHECK_SECONDS,
        retry: float = RETRY_SECONDS,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`get_api_resources(group, version)`: kubernetes-asyncio's
        CustomObjectsApi.get_api_resources, or any method of that shape."""
        self._get = get_api_resources
        self._recheck = recheck
        self._retry = retry
        self._sleep = sleep

    async def serves(self, resource: ApiResource) -> bool:
        """Whether the apiserver serves `resource` now; ApiError when it cannot tell."""
        try:
            body = await call(
                f"discover {resource.group}/{resource.version}",
                self._get,
                resource.group,
                resource.version,
                request_timeout=TIMEOUT_SECONDS,
            )
        except NotFound:
            return False
        return any(_name(r) == resource.plural for r in body.get("resources") or [])

    def waiter(self, resource: ApiResource) -> Callable[[], Coroutine[Any, Any, None]]:
        """An awaitable that returns once `resource` is served, for Reflector's `served`."""
        absent = False

        async def served() -> None:
            nonlocal absent
            while not await self._found(resource):
                if not absent:
                    log.info(
                        "%s is not served by this cluster (its CRD is not installed); "
                        "looking again every %gs",
                        resource,
                        self._recheck,
                    )
                absent = True
                await self._sleep(self._recheck)
            if absent:
                log.info("%s is served now; listing it", resource)
            absent = False

        return served

    async def versions(self, get_api_group: Method, group: str) -> list[str]:
        """The versions the apiserver serves of `group` (none when it serves no such group);
        ApiError when it cannot tell. `get_api_group`: e.g. kubernetes-asyncio's
        SchedulingApi.get_api_group."""
        try:
            body = await call(f"discover {group}", get_api_group, request_timeout=TIMEOUT_SECONDS)
        except NotFound:
            return []
        return [str(v.get("version")) for v in body.get("versions") or [] if isinstance(v, dict)]

    async def unknown_versions(
        self, get_api_group: Method, group: str, known: frozenset[str]
    ) -> list[str]:
        """The served versions of `group` outside `known`, logged once as a warning: their
        objects are read as absent. Asked until discovery answers."""
        while True:
            try:
                served = await self.versions(get_api_group, group)
                break
            except ApiError as e:
                log.debug("%s; asking again in %.0fs", e, self._retry)
                await self._sleep(self._retry)
        unknown = [v for v in served if v not in known]
        if unknown:
            log.warning(
                "%s serves %s, which kube-rdma does not read (it reads %s): objects there are "
                "read as absent",
                group,
                ", ".join(f"{group}/{v}" for v in unknown),
                ", ".join(sorted(known)),
            )
        return unknown

    async def _found(self, resource: ApiResource) -> bool:
        while True:
            try:
                return await self.serves(resource)
            except ApiError as e:
                log.debug("%s; asking again in %.0fs", e, self._retry)
                await self._sleep(self._retry)


def _name(entry: Any) -> str | None:
    return entry.get("name") if isinstance(entry, dict) else None
