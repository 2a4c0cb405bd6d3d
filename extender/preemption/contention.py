"""Gangs that do not fit: which wait, which hold nodes, which preempt.

The planner asks here when it cannot plan a gang. A gang whose priority is above some running
pods' first tries to preempt (extender/preemption/victims.py chooses whole units, least damage
first); the nodes it frees are held for it until its victims are gone (extender/book/holds.py).
A gang that cannot preempt, and has waited `hold_after` seconds, holds the domain that needs the
fewest GPUs still freed, and waits for it to drain. Either way its members fail as
unresolvable meanwhile, with the reason, and the gang is planned whole once the room is there.

Both choose among the gang's own levels, as its plan will (a gang requiring the NVLink domain
holds and preempts inside one NVLink domain, never wider), and count what a pod's eviction
frees with the devices of its resource claims (extender/preemption/freeing.py), so that DRA nodes
are judged as device-plugin nodes are.

Decisions look at the whole cache, so each gang is reconsidered at most every
`recheck` seconds; a filter call in between answers from the last decision.

Only gangs whose members exist get here (extender/gangs/quorum.py). A gang with a member that
says `preemptionPolicy: Never` neither preempts nor holds. A gang that preempted and is still
not placed backs off before it preempts again, and every preemption must fit in the
extender's eviction budget (extender/preemption/limits.py). Where the admin lists who may
preempt across namespaces (`--preempt-across-namespaces-*`), any other gang takes victims in
its own namespace only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from extender.book.holds import Hold, HoldBook
from extender.book.reservations import GangKey, Reservations
from extender.cluster.model import Cluster, NodeInfo
from extender.cluster.pods import PodKey
from extender.engine import Engine
from extender.gangs.identity import Gang, Singleton
from extender.gangs.requirements import GangLevels
from extender.podview import PodView
from extender.preemption.freeing import Freeing, emptied
from extender.preemption.limits import BACKOFF, Backoff, EvictionBudget
from extender.preemption.priority import (
    Unit,
    group_never_preempts,
    may_cross,
    may_preempt,
    pod_priority,
    waiting_priority,
)
from extender.preemption.settings import ContentionSettings as ContentionSettings
from extender.preemption.units import Units
from extender.preemption.victims import Room, Slices, VictimChoice, choose_victims
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")

PROTECTED_SECONDS = 300.0
"""How long a unit whose eviction a PodDisruptionBudget refused is left out of victims: the
budget's own controller needs time before it allows a disruption again."""
DISCOVERED = 8
"""Waiting gangs decided for per upkeep round: each decision costs a pass over the nodes."""
AHEAD = 8
"""Waiting gangs of a higher priority whose needs are set aside before a gang is planned."""
GangOf = Callable[[Json], "Gang | Singleton"]


@dataclass
class Waiting:
    """A gang that was filtered and could not be planned."""

    gang: Gang
    member: PodView
    priority: int
    preempts: bool
    since: float
    decided: float | None = None
    reason: str = ""
    members: set[PodKey] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    """Its members' PriorityClasses."""
    never: str | None = None
    """Why its scheduling.k8s.io group keeps it from preempting (preemptionPolicy: Never)."""


class Contention:
    def __init__(
        self,
        cluster: Cluster,
        engine: Engine,
        book: Reservations,
        holds: HoldBook,
        gang_of: GangOf,
        levels: GangLevels,
        settings: ContentionSettings,
        clock: Callable[[], float],
        start_preemption: Callable[[Hold], None],
        freeing: Freeing,
        gpu_resources: tuple[str, ...] = ("nvidia.com/gpu",),
        budget: EvictionBudget | None = None,
    ) -> None:
        """`freeing`: what evicting pods frees, their claims' devices included; `budget`: the
        evictions the extender may still make (extender/preemption/limits.py)."""
        self.budget = budget or EvictionBudget(settings.eviction_budget, clock)
        self.backoff = Backoff(settings.backoff, settings.backoff_cap)
        self._deferred: set[GangKey] = set()
        """Gangs whose preemption the backoff deferred, counted once per round."""
        self.freeing = freeing
        self._gather = Units(cluster, gang_of, freeing, gpu_resources)
        self._cluster = cluster
        self._engine = engine
        self._book = book
        self.holds = holds
        self._levels = levels
        """The levels each gang is planned over, the planner's own."""
        self.settings = settings
        self._clock = clock
        self._start = start_preemption
        self.waiting: dict[GangKey, Waiting] = {}
        self._protected: dict[PodKey, float] = {}
        """Pods whose eviction a budget refused, and until when they are not victims."""

    # What the planner and the scheduler ask

    def note(self, gang: Gang, member: PodView, pod: Json) -> Waiting:
        """A member of a gang with no plan was filtered."""
        now = self._clock()
        entry = self.waiting.get(gang.key)
        if entry is None:
            entry = self.waiting[gang.key] = Waiting(gang, member, 0, True, now)
        entry.priority = waiting_priority(gang, pod, entry.priority)
        entry.never = group_never_preempts(gang)
        entry.preempts = entry.preempts and may_preempt(pod) and entry.never is None
        entry.members.add(member.key)
        if name := (pod.get("spec") or {}).get("priorityClassName"):
            entry.classes.add(str(name))
        return entry

    def waiting_from_cache(
        self, pending: Iterable[Json], of: Callable[[Json], tuple[Gang, PodView] | None]
    ) -> list[Waiting]:
        """The gangs whose pods of our scheduler wait in the cache, noted as waiting; those not
        decided within `recheck`, highest priority and oldest first, at most DISCOVERED."""
        for pod in pending:
            name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
            if name != self.settings.scheduler_name:
                continue
            found = of(pod)
            if found is not None:
                self.note(*found, pod)
        now = self._clock()
        due = [
            w
            for w in self.waiting.values()
            if w.decided is None or now - w.decided >= self.settings.recheck
        ]
        due.sort(key=lambda w: (-w.priority, w.since))
        return due[:DISCOVERED]

    def note_adopted(self, gang: Gang, member: PodView, priority: int) -> Waiting:
        """A gang whose hold another process made: it waits from now on, here."""
        entry = self.waiting[gang.key] = Waiting(gang, member, priority, True, self._clock())
        return entry

    def placed(self, gang: GangKey) -> None:
        """The gang has a plan: it waits no more, and its hold has done its work."""
        self.waiting.pop(gang, None)
        self.holds.remove(gang, record=False)

    def forget(self, gang: GangKey) -> None:
        """The gang may not act (extender/gangs/quorum.py): it neither waits nor holds."""
        self.waiting.pop(gang, None)
        self.holds.remove(gang)

    def now(self) -> float:
        return self._clock()

    def priority(self, gang: GangKey) -> int:
        entry = self.waiting.get(gang)
        return entry.priority if entry else 0

    def protect(self, pod: PodKey) -> None:
        """A PodDisruptionBudget refused to evict the pod: its unit is no victim for a while."""
        self._protected[pod] = self._clock() + PROTECTED_SECONDS

    def refused(self, hold: Hold, reason: str, pods: list[PodKey], begun: bool = False) -> None:
        """A preemption's dry runs were refused (or, `begun`, a real eviction after some were
        made): the gang holds nothing, and decides again, without the units of the pods a
        budget protects. Refused before any eviction, the round does not count."""
        self.holds.remove(hold.gang)
        if not begun:
            self.backoff.undo(hold.gang)
            self.budget.give_back(len(hold.victims))
        for pod in pods:
            self.protect(pod)
        waiting = self.waiting.get(hold.gang)
        if waiting is not None:
            waiting.decided = None
            waiting.reason = f"preemption refused: {reason}"

    def ahead(self, gang: GangKey) -> list[tuple[Gang, PodView]]:
        """The waiting gangs of a higher priority than `gang`'s, highest and oldest first; at
        most AHEAD of them, as each costs the planner a pass over the nodes."""
        mine = self.priority(gang)
        others = [w for w in self.waiting.values() if w.priority > mine and w.gang.key != gang]
        others.sort(key=lambda w: (-w.priority, w.since))
        return [(w.gang, w.member) for w in others[:AHEAD]]

    def unplaced(self, entry: Waiting, no_fit: str) -> str:
        """Decide, at most every `recheck` seconds, whether the gang preempts or holds; the
        reason its members are refused."""
        now = self._clock()
        if entry.decided is not None and now - entry.decided < self.settings.recheck:
            return entry.reason or no_fit
        entry.decided = now
        hold: Hold | str | None = self.holds.get(entry.gang.key)
        if hold is None and entry.preempts and self.settings.preemption:
            hold = self._preempt(entry)
        # preemptionPolicy: Never holds nothing either: kube-scheduler never lets such a pod
        # keep others off a node.
        if (
            not isinstance(hold, Hold)
            and entry.preempts
            and now - entry.since >= self.settings.hold_after
        ):
            hold = self._hold(entry) or hold
        entry.reason = no_fit if hold is None else f"{no_fit}; {_progress(hold)}"
        if entry.never is not None:
            entry.reason = f"{entry.reason}; {entry.never}"
        return entry.reason

    # Preemption

    def _preempt(self, entry: Waiting) -> Hold | str | None:
        """The hold of the preemption made; else why none is made when something stopped one
        (the backoff, the eviction budget), else None."""
        key, now = entry.gang.key, self._clock()
        if (wait := self.backoff.left(key, now)) > 0:
            if key not in self._deferred:
                self._deferred.add(key)
                self.budget.refusals[BACKOFF] += 1
            rounds = self.backoff.rounds(key)
            return f"preempts again in {wait:.0f}s at the earliest ({rounds} preemption(s) so far)"
        across = may_cross(
            entry.gang.namespace,
            entry.classes,
            self.settings.across_classes,
            self.settings.across_namespaces,
        )

        def eligible(pod: Json) -> bool:
            mine = (pod.get("metadata") or {}).get("namespace") == entry.gang.namespace
            return pod_priority(pod) < entry.priority and (across or mine)

        units = self._evictable(self._gather.units(eligible, key))
        if not units:
            return None
        choice = self._choose(entry, units, rank=None)
        if choice is None or not choice.units:
            return None
        victims = sum(len(u.pods) for u in choice.units)
        if (full := self.budget.take(victims)) is not None:
            log.warning("gang %s does not preempt: %s", entry.gang, full)
            return f"does not preempt: {full}"
        self.backoff.preempted(key, now)
        self._deferred.discard(key)
        hold = self._make_hold(entry, choice, tuple((u.name, u.pods) for u in choice.units))
        log.info(
            "gang %s preempts %s",
            entry.gang,
            ", ".join(u.name for u in choice.units),
            extra={"gang": str(entry.gang)},
        )
        self._start(hold)
        return hold

    # Holds

    def _hold(self, entry: Waiting) -> Hold | None:
        units = self._gather.units(lambda pod: True, entry.gang.key)
        choice = self._choose(entry, units, rank=_drain_rank)
        if choice is None:
            return None
        gpus = entry.member.gpus * len(choice.nodes)
        if not self._within_share(entry, gpus):
            return None
        return self._make_hold(entry, choice, ())

    def _within_share(self, entry: Waiting, gpus: int) -> bool:
        total = sum(n.allocatable.get(entry.member.gpu_resource, 0) for n in self._cluster.nodes())
        if self.holds.held_gpus() + gpus <= self.settings.hold_share * total:
            return True
        first = min(self.waiting.values(), key=lambda w: (-w.priority, w.since))
        return first is entry

    def _make_hold(
        self,
        entry: Waiting,
        choice: VictimChoice,
        units: tuple[tuple[str, tuple[PodKey, ...]], ...],
    ) -> Hold:
        hold = Hold(
            entry.gang.key,
            entry.priority,
            choice.domain,
            frozenset(choice.nodes),
            entry.member.gpus * len(choice.nodes),
            self._clock(),
            units,
        )
        for lost in self.holds.put(hold):
            log.info("gang %s lost its hold to gang %s", lost.label, hold.label)
            if lost.gang in self.waiting:
                self.waiting[lost.gang].decided = None
        return hold

    def _choose(
        self,
        entry: Waiting,
        units: list[Unit],
        rank: Callable[[VictimChoice], tuple[object, ...]] | None,
    ) -> VictimChoice | None:
        """Among the gang's own levels, narrowest first: a gang requiring a level gets a
        domain of that level or of one below it, never a wider one, and never the cluster; a
        sliced gang, one where each slice has room inside one domain of its level."""
        requirements = self._levels
        levels = requirements.levels()
        search = requirements.search(entry.member, entry.gang, levels)
        rooms = self._rooms(entry, lambda node: requirements.labels(node, levels))
        if not rooms:
            return None
        member = entry.member
        need = {member.gpu_resource: member.gpus, **member.rdma}
        slices = None
        if search.sliced and search.slice_level is not None:
            slices = Slices(search.slice_level, search.slice_size, search.slice_sizes)
        size = entry.gang.size
        return choose_victims(rooms, units, need, size, search.levels, rank, search.cluster, slices)

    def _rooms(
        self, entry: Waiting, labels: Callable[[NodeInfo], Mapping[str, str]]
    ) -> dict[str, Room]:
        """Nodes the members could use once emptied: every check but capacity passes, and no
        hold of the same or a higher priority covers them."""
        rooms = {}
        nominated = self._cluster.nominated_use(entry.priority)
        for node in self._cluster.nodes():
            if self.holds.blocking(node.name, entry.priority, entry.gang.key):
                continue
            if not self._engine.verdict_on(entry.member, emptied(node)).ok:
                continue
            held = self._book.held(node.name, entry.gang.key)
            taken = nominated.get(node.name, {})
            free = {r: node.free(r) - held.get(r, 0) - taken.get(r, 0) for r in node.allocatable}
            rooms[node.name] = Room(labels(node), free)
        return rooms

    def _evictable(self, units: list[Unit]) -> list[Unit]:
        """The units no PodDisruptionBudget refused to let go of lately."""
        now = self._clock()
        self._protected = {k: t for k, t in self._protected.items() if t > now}
        return [u for u in units if not any(k in self._protected for k in u.pods)]

    # Upkeep

    def sweep(self, live: Callable[[GangKey], bool]) -> None:
        """Forget gangs no longer waiting (`live` says whether any member still is), and holds
        whose preemption is over; re-decide the others next time they are filtered."""
        for key in [k for k in self.waiting if not live(k)]:
            self.waiting.pop(key)
            self.holds.remove(key)
            self.backoff.forget(key)
        self.backoff.prune(self._clock())
        self._deferred = {k for k in self._deferred if self.backoff.rounds(k)}
        for hold in self.holds:
            if hold.gang not in self.waiting:
                self.holds.remove(hold.gang)
            elif hold.units and not any(self._cluster.pod(*k) for k in hold.victims):
                hold.units = ()
                self.holds.changed(hold)


def _progress(hold: Hold | str) -> str:
    return hold if isinstance(hold, str) else hold.progress()


def _drain_rank(choice: VictimChoice) -> tuple[object, ...]:
    """Holds: fewest GPUs still to free, then the lowest priority; then, where every occupant
    has a deadline (activeDeadlineSeconds), the domain drained soonest at the latest, before
    any whose end is unknown; then the youngest occupants."""
    gpus = sum(u.gpus for u in choice.units)
    top = max((u.priority for u in choice.units), default=0)
    known = [u.ends_by for u in choice.units if u.ends_by is not None]
    drained_by = (0, max(known, default="")) if len(known) == len(choice.units) else (1, "")
    youngest = max((u.started for u in choice.units), default="")
    return (gpus, top, drained_by, _invert(youngest))


def _invert(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)
