"""The levels of a Kueue Topology or a KAI Topology, named on the command line and watched, so
that an admin's change applies to the next gang planned.

Both list their levels top to bottom, each a `nodeLabel` (kubernetes-sigs/kueue
apis/kueue/v1beta1/topology_types.go, NVIDIA/KAI-Scheduler pkg/apis/kai/v1/topology_types.go,
where `kubernetes.io/hostname` may only be the lowest); the planner wants them narrowest first.
Each served version is found by API discovery and watched by name alone (a field selector on
`metadata.name`), with `list` and `watch` on that one resource. Until the object is read, or
after it is deleted, the command line's preset applies, and a log line says so.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from extender.levels.vocabularies import CLIQUE, Levels
from kube_rdma.core.frameworks import kai, kueue
from kube_rdma.core.objects import Json
from kube_rdma.core.tasks import cancelled
from kube_rdma.kube.discovery import ApiResource, Discovery
from kube_rdma.kube.reflector import Reflector

log = logging.getLogger("kube_rdma.extender")

KINDS: dict[str, tuple[ApiResource, ...]] = {
    "kueue": tuple(ApiResource(kueue.GROUP, v, "topologies") for v in kueue.TOPOLOGY_VERSIONS),
    "kai": tuple(ApiResource(kai.GROUP, v, "topologies") for v in kai.TOPOLOGY_VERSIONS),
}


@dataclass(frozen=True)
class TopologyRef:
    kind: str
    """`kueue` or `kai`."""
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


def parse_ref(text: str) -> TopologyRef:
    """`kueue:NAME` or `kai:NAME`; ValueError saying what is expected otherwise."""
    kind, _, name = text.partition(":")
    if kind not in KINDS or not name:
        raise ValueError(
            f"--topology-object {text!r}: expected kueue:NAME (a Kueue Topology) or kai:NAME "
            "(a KAI Topology)"
        )
    return TopologyRef(kind, name)


def levels_of(obj: Json, ref: TopologyRef, nvlink: tuple[str, ...] = (CLIQUE,)) -> Levels:
    """The object's levels, narrowest first; ValueError when it lists none."""
    levels = ((obj.get("spec") or {}).get("levels")) or []
    labels = [str(level.get("nodeLabel")) for level in levels if isinstance(level, dict)]
    labels = [label for label in labels if label and label != "None"]
    if not labels:
        raise ValueError(f"Topology {ref} lists no levels with a nodeLabel")
    return Levels(tuple(reversed(labels)), nvlink, f"Topology {ref}")


class TopologyWatch:
    """Keeps `apply` fed with the named Topology's levels (None: not there now)."""

    def __init__(
        self,
        custom_api: Any,
        ref: TopologyRef,
        apply: Callable[[Levels | None], None],
        nvlink: tuple[str, ...] = (CLIQUE,),
        discovery: Discovery | None = None,
    ) -> None:
        self._ref = ref
        self._apply = apply
        self._nvlink = nvlink
        discovery = discovery or Discovery(custom_api.get_api_resources)
        self.reflectors = [
            Reflector(
                functools.partial(
                    custom_api.list_cluster_custom_object,
                    resource.group,
                    resource.version,
                    resource.plural,
                    field_selector=f"metadata.name={ref.name}",
                ),
                self._replace,
                self._event,
                f"{resource.plural}.{resource.group} {resource.version} {ref.name}",
                served=discovery.waiter(resource),
            )
            for resource in KINDS[ref.kind]
        ]

    def _replace(self, items: list[Json]) -> None:
        self._read(items[0] if items else None)

    def _event(self, kind: str, obj: Json) -> None:
        self._read(None if kind == "DELETED" else obj)

    def _read(self, obj: Json | None) -> None:
        if obj is None:
            log.warning("Topology %s is not there: the command line's levels apply", self._ref)
            self._apply(None)
            return
        try:
            levels = levels_of(obj, self._ref, self._nvlink)
        except ValueError as error:
            log.warning("%s; the levels in use are kept", error)
            return
        log.info("levels from Topology %s: %s", self._ref, ", ".join(levels.fabric))
        self._apply(levels)

    async def context(self, _: object) -> AsyncIterator[None]:
        """An aiohttp cleanup context: the watch runs while the app does."""
        tasks = [asyncio.create_task(r.run()) for r in self.reflectors]
        yield
        await cancelled(*tasks)
