"""Running gangs that lost members and were not made whole again: opt-in teardown of the rest.

A training job whose worker was evicted (by anyone: a drain, kubelet's node-pressure eviction,
another scheduler's preemption) or whose node is gone usually hangs in its collective, or
crashes: either way the members still bound hold their GPUs for nothing. Training operators
restart such a job when its pods fail or are deleted (PyTorchJob and MPIJob restart policies,
JobSet's failurePolicy, Volcano's policies), so deleting the rest is how it starts again
quickly. With a grace period set, a gang seen whole that has fewer members bound than its size
for longer than the grace is torn down: its bound members are evicted, whole. Off by default:
some jobs (elastic ones, torchrun with --max-restarts) survive losing a member.

A gang kube-scheduler is still placing itself (extender/gangs/identity.py `held`, its group not
marked scheduled yet) is never judged: it is not running short, it is being placed.

Checked every CHECK_SECONDS at most, over the whole pod cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from extender.book.reservations import GangKey
from extender.cluster.pods import PodKey, pod_key
from extender.gangs.identity import Gang, Singleton
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")

CHECK_SECONDS = 10.0


class BrokenGangs:
    def __init__(
        self,
        grace: float | None,
        clock: Callable[[], float],
        gang_of: Callable[[Json], Gang | Singleton],
        tear_down: Callable[[Gang, list[PodKey]], bool],
    ) -> None:
        """`grace` in seconds; None turns the teardown off. `tear_down` answers False when it
        could not act now (the eviction budget): the gang is judged again at the next check."""
        self._grace = grace
        self._clock = clock
        self._gang_of = gang_of
        self._tear_down = tear_down
        self._whole: set[GangKey] = set()
        self._broken: dict[GangKey, float] = {}
        self._checked: float | None = None

    def check(self, pods: Iterable[Json]) -> None:
        if self._grace is None:
            return
        now = self._clock()
        if self._checked is not None and now - self._checked < CHECK_SECONDS:
            return
        self._checked = now
        bound: dict[GangKey, tuple[Gang, list[PodKey]]] = {}
        for pod in pods:
            if not (pod.get("spec") or {}).get("nodeName"):
                continue
            gang = self._gang_of(pod)
            if isinstance(gang, Gang) and not _placing(gang):
                bound.setdefault(gang.key, (gang, []))[1].append(pod_key(pod))
        self._judge(bound, now)

    def _judge(self, bound: dict[GangKey, tuple[Gang, list[PodKey]]], now: float) -> None:
        assert self._grace is not None
        for key in list(self._whole):
            if key not in bound:
                self._whole.discard(key)
                self._broken.pop(key, None)
        for key, (gang, members) in bound.items():
            if len(members) >= gang.size:
                self._whole.add(key)
                self._broken.pop(key, None)
            elif key in self._whole:
                since = self._broken.setdefault(key, now)
                if now - since >= self._grace:
                    log.warning(
                        "gang %s has run with %d of %d members for %gs; tearing down the rest",
                        gang,
                        len(members),
                        gang.size,
                        now - since,
                        extra={"gang": str(gang)},
                    )
                    if not self._tear_down(gang, members):
                        continue
                    self._whole.discard(key)
                    self._broken.pop(key, None)

    def broken(self) -> dict[GangKey, float]:
        """Gangs running short of members, and since when."""
        return dict(self._broken)


def _placing(gang: Gang) -> bool:
    """kube-scheduler holds the gang itself and has not said it placed it yet (its PodGroup's
    PodGroupScheduled or PodGroupInitiallyScheduled condition): its members bound so far are
    not a gang that lost members."""
    return gang.held and gang.native is not None and not gang.native.scheduled
