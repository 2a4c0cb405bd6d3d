"""Every pod as the apiserver shows it, checked at each change, for the failover harness.

What must never happen, recorded as it happens: a pod bound to a second node, a node given more
GPUs than it has (read from each pod's own request), a gang left partly bound. A gang is partly
bound for a moment on every placement (its members' bindings land one by one); each such spell
is recorded with how it ended, so that a spell that never ended whole shows up during the run,
not only at its end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kube_rdma.core import keys
from kube_rdma.core.objects import Json

GPU = "nvidia.com/gpu"
PodKey = tuple[str, str]


@dataclass
class Spell:
    """A stretch of time during which a gang had some members bound and not all."""

    gang: str
    began: float
    ended: float | None = None
    outcome: str = ""
    """"whole" once every member is bound; "open" while it lasts."""


@dataclass
class Findings:
    bound_twice: list[str] = field(default_factory=list)
    overcommitted: list[str] = field(default_factory=list)
    gangs_whole: set[str] = field(default_factory=set)
    spells: list[Spell] = field(default_factory=list)


def requested_gpus(pod: Json) -> int:
    """The pod's GPUs, as the scheduler counts them: containers summed, init containers at most."""
    spec = pod.get("spec") or {}

    def gpus(container: Json) -> int:
        resources = container.get("resources") or {}
        asked = (resources.get("limits") or {}).get(GPU) or (resources.get("requests") or {}).get(
            GPU
        )
        return int(asked or 0)

    running = sum(gpus(c) for c in spec.get("containers") or [])
    return max([running, *(gpus(c) for c in spec.get("initContainers") or [])])


class Observer:
    """Fed the pods' list and watch events; `findings` says what it saw."""

    def __init__(
        self,
        findings: Findings,
        gpus_per_node: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.findings, self.gpus_per_node, self.clock = findings, gpus_per_node, clock
        self.nodes: dict[PodKey, str] = {}
        self.gpus: dict[PodKey, int] = {}
        self.gangs: dict[PodKey, str] = {}
        self.sizes: dict[str, int] = {}
        """Each gang's size, from its members' annotation."""
        self.open: dict[str, Spell] = {}
        self.last_bind = 0.0

    def replace(self, items: list[Json]) -> None:
        for item in items:
            self.event("ADDED", item)

    def event(self, kind: str, pod: Json) -> None:
        meta = pod["metadata"]
        key = (meta["namespace"], meta["name"])
        if kind == "DELETED":
            self.nodes.pop(key, None)
            return
        node = (pod.get("spec") or {}).get("nodeName") or ""
        before = self.nodes.get(key, "")
        annotations = meta.get("annotations") or {}
        self.gangs[key] = annotations.get(keys.GANG, "")
        if self.gangs[key] and str(annotations.get(keys.GANG_SIZE, "")).isdigit():
            self.sizes[self.gangs[key]] = int(annotations[keys.GANG_SIZE])
        self.gpus[key] = requested_gpus(pod)
        self.nodes[key] = node
        if before and node != before:
            self.findings.bound_twice.append(f"{key[1]}: {before}, then {node}")
        if node and not before:
            self.last_bind = self.clock()
            self._check(node)
            self._gang_changed(key, self.last_bind)

    def bound_since(self, moment: float) -> bool:
        return self.last_bind >= moment

    def partly_bound(self) -> list[str]:
        """Gangs with some members bound and some not, now; a member deleted counts as not
        bound, so a gang that lost part of its members (a preemption taking part of it) is
        partly bound too."""
        by_gang: dict[str, list[str]] = {}
        for key, node in self.nodes.items():
            if self.gangs[key]:
                by_gang.setdefault(self.gangs[key], []).append(node)
        return sorted(
            gang
            for gang, members in by_gang.items()
            if 0 < sum(map(bool, members)) < max(len(members), self.sizes.get(gang, 0))
        )

    def _check(self, node: str) -> None:
        used = sum(self.gpus[k] for k, n in self.nodes.items() if n == node)
        if used > self.gpus_per_node:
            self.findings.overcommitted.append(f"{node}: {used} GPUs")

    def _gang_changed(self, key: PodKey, now: float) -> None:
        gang = self.gangs[key]
        if not gang:
            return
        members = [n for k, n in self.nodes.items() if self.gangs.get(k) == gang]
        if all(members):
            self.findings.gangs_whole.add(gang)
            if spell := self.open.pop(gang, None):
                spell.ended, spell.outcome = now, "whole"
        elif gang not in self.open:
            self.open[gang] = Spell(gang, now, outcome="open")
            self.findings.spells.append(self.open[gang])
