"""The units holds and preemption weigh, gathered from the pod cache: the bound pods, not
finished, holding GPUs or RDMA NICs (requested, or through their resource claims), a gang
whole (all its bound members, wherever they run; a scheduling.k8s.io group whose disruptionMode
is Single gives a unit per pod), else a pod alone, each with what its
eviction frees (extender/preemption/freeing.py). A unit whose eviction frees nothing, alone or with
others, is left out: taking it would only do damage.
"""

from __future__ import annotations

from collections.abc import Callable

from extender.book.reservations import GangKey
from extender.cluster.model import Cluster
from extender.cluster.pods import TERMINAL_PHASES, pod_key, pod_requests
from extender.gangs.identity import Gang, Singleton
from extender.preemption.freeing import Freeing
from extender.preemption.priority import (
    Unit,
    disrupted_one_by_one,
    group_priority,
    pod_priority,
    started,
    unit_ends_by,
)
from kube_rdma.core.objects import Json


class Units:
    def __init__(
        self,
        cluster: Cluster,
        gang_of: Callable[[Json], Gang | Singleton],
        freeing: Freeing,
        gpu_resources: tuple[str, ...],
    ) -> None:
        self._cluster = cluster
        self._gang_of = gang_of
        self._freeing = freeing
        self._gpu_resources = gpu_resources

    def units(self, eligible: Callable[[Json], bool], own: GangKey) -> list[Unit]:
        """The units of the `eligible` bound pods, the members of gang `own` left out."""
        grouped: dict[str, list[Json]] = {}
        priorities: dict[str, int] = {}
        for pod in self._cluster.pods():
            spec = pod.get("spec") or {}
            holds = pod_requests(pod) or spec.get("resourceClaims")
            if not spec.get("nodeName") or not holds or _finished(pod) or not eligible(pod):
                continue
            gang = self._gang_of(pod)
            if isinstance(gang, Gang) and gang.key == own:
                continue
            whole = isinstance(gang, Gang) and not disrupted_one_by_one(gang)
            name = f"gang {gang}" if whole else f"pod {_name(pod)}"
            grouped.setdefault(name, []).append(pod)
            if (set_by_group := group_priority(gang)) is not None:
                priorities[name] = set_by_group
        units = [self._unit(name, pods, priorities.get(name)) for name, pods in grouped.items()]
        return [u for u in units if u.shared or any(any(a.values()) for a in u.nodes.values())]

    def _unit(self, name: str, pods: list[Json], priority: int | None = None) -> Unit:
        """`priority`: the one its scheduling.k8s.io group sets, over its pods'."""
        found = self._freeing.freed(pods)
        freed = found.resources
        return Unit(
            name=name,
            priority=max(pod_priority(p) for p in pods) if priority is None else priority,
            pods=tuple(pod_key(p) for p in pods),
            nodes=freed,
            gpus=sum(a.get(r, 0) for a in freed.values() for r in self._gpu_resources),
            started=max(started(p) for p in pods),
            gang=name.startswith("gang "),
            ends_by=unit_ends_by(pods),
            uids=frozenset(str((p.get("metadata") or {}).get("uid") or "") for p in pods),
            shared=found.shared,
        )


def _finished(pod: Json) -> bool:
    """A pod that ran to its end holds nothing (the model counts it nowhere)."""
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def _name(pod: Json) -> str:
    namespace, name = pod_key(pod)
    return f"{namespace}/{name}"
