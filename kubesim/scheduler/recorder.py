"""What the apiserver showed of every gang over time, and the partial gangs measured from it.

A gang is partial while some but not all of its members are bound, before it was ever whole: its
bound members hold GPUs that nothing uses. Kubernetes binds one pod per request, so even a gang
released at once is partial for the instants between its binds; `max_partial_gangs` therefore
takes a duration below which a partial spell is not counted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kubesim.scheduler.clock import Clock
from kubesim.scheduler.pods import GPU, bound_node, pod_key, pod_requests

GangKey = tuple[str, str]
"""(namespace, gang name)"""
GangOf = Callable[[Json], "tuple[GangKey, int] | None"]
"""A pod's gang and its size; None for a pod alone."""


def gang_of(pod: Json) -> tuple[GangKey, int] | None:
    """The pod's gang and its size from kube-rdma's annotations; None for a pod alone."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    name, size = annotations.get(keys.GANG), str(annotations.get(keys.GANG_SIZE) or "")
    if not name or not size.isdigit() or int(size) < 2:
        return None
    return (str(meta.get("namespace") or "default"), str(name)), int(size)


@dataclass
class GangRecord:
    """One gang as the apiserver showed it over time."""

    key: GangKey
    size: int
    created: float
    """When its first member appeared."""
    members: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    """Pod name -> (GPUs, node it is bound to or None)."""
    placed: float | None = None
    """When all `size` members were first bound."""
    nodes: tuple[str, ...] = ()
    leaves: frozenset[str] = frozenset()
    spines: frozenset[str] = frozenset()
    spells: list[tuple[float, float | None]] = field(default_factory=list)
    """Partial spells: (start, end), end None while it lasts."""

    @property
    def bound(self) -> int:
        return sum(1 for _, node in self.members.values() if node)

    @property
    def partial(self) -> bool:
        """Some but not all members bound, before the gang was ever whole."""
        return self.placed is None and 0 < self.bound < self.size

    @property
    def held_gpus(self) -> int:
        """GPUs the gang's bound members hold while the gang is partial."""
        return sum(gpus for gpus, node in self.members.values() if node) if self.partial else 0


class Recorder:
    """Partial gangs at every change the apiserver shows: how many at once, GPU-seconds held by
    them, time from a gang's first member to its last bind, and the leaves a whole gang got.
    `labels` gives a node's labels (its leaf and spine); `gangs` which gang a pod is a member of
    (by default, from kube-rdma's annotations)."""

    def __init__(
        self,
        clock: Clock,
        labels: Callable[[str], Mapping[str, str]],
        gangs: GangOf = gang_of,
    ) -> None:
        self._clock, self._labels, self._gang_of = clock, labels, gangs
        self.gangs: dict[GangKey, GangRecord] = {}
        self.max_partial = 0
        """The most gangs partial at one instant."""
        self._partial = 0
        self._held = 0
        self._gpu_seconds = 0.0
        self._since = clock.now()

    @property
    def partial_gangs(self) -> int:
        """Gangs partial now."""
        return self._partial

    def partial_gpu_seconds(self) -> float:
        """GPUs held by bound members of partial gangs, integrated over time until now."""
        return self._gpu_seconds + self._held * (self._clock.now() - self._since)

    def time_to_place(self) -> dict[GangKey, float]:
        return {k: g.placed - g.created for k, g in self.gangs.items() if g.placed is not None}

    def max_partial_gangs(self, longer_than: float) -> int:
        """The most gangs at once in partial spells strictly longer than `longer_than` seconds."""
        now, edges = self._clock.now(), []
        for gang in self.gangs.values():
            for start, end in gang.spells:
                stop = now if end is None else end
                if stop - start > longer_than:
                    edges += [(start, 1), (stop, -1)]
        most = current = 0
        for _, step in sorted(edges):  # at equal times ends (-1) come first
            current += step
            most = max(most, current)
        return most

    def pod_changed(self, old: Json | None, new: Json | None) -> None:
        obj = new if new is not None else old
        found = None if obj is None else self._gang_of(obj)
        if obj is None or found is None:
            return
        key, size = found
        now = self._clock.now()
        self._gpu_seconds += self._held * (now - self._since)
        self._since = now
        gang = self.gangs.get(key)
        if gang is None:
            gang = self.gangs[key] = GangRecord(key, size, now)
        was_partial, held = gang.partial, gang.held_gpus
        self._update_member(gang, obj, new, size)
        if gang.placed is None and gang.bound >= gang.size:
            self._place(gang, now)
        self._held += gang.held_gpus - held
        if gang.partial != was_partial:
            self._partial += 1 if gang.partial else -1
            if gang.partial:
                gang.spells.append((now, None))
            else:
                gang.spells[-1] = (gang.spells[-1][0], now)
        self.max_partial = max(self.max_partial, self._partial)

    def _update_member(self, gang: GangRecord, obj: Json, new: Json | None, size: int) -> None:
        name = pod_key(obj)[1]
        if new is None:
            gang.members.pop(name, None)
        else:
            gang.members[name] = (pod_requests(new).get(GPU, 0), bound_node(new))
            gang.size = size

    def _place(self, gang: GangRecord, now: float) -> None:
        gang.placed = now
        gang.nodes = tuple(sorted(node for _, node in gang.members.values() if node))
        labels = [self._labels(node) for node in gang.nodes]
        gang.leaves = frozenset(str(ls[keys.LEAF]) for ls in labels if keys.LEAF in ls)
        gang.spines = frozenset(str(ls[keys.SPINE]) for ls in labels if keys.SPINE in ls)
