"""Holds: nodes kept for a gang that has waited too long, so that it is placed whole at last.

All-or-nothing placement has a cost: a gang needing many nodes waits until that many are free
at once, and on a busy cluster a stream of small jobs keeps taking each node as it frees. After
`hold_after` seconds without a plan, the gang gets a hold: one domain of the levels it is
planned over (those it requires or prefers), chosen as the one that needs the fewest GPUs
still freed, then whose occupants have the lowest priority, then the one drained soonest at
the latest where every occupant has activeDeadlineSeconds, then the youngest. No pod of the
same or lower priority that is not a member may start on a held node: its filter answer there
is unresolvable, naming the gang, so kube-scheduler does not preempt for it either. As the
occupants finish, the nodes drain, and the gang is planned on them and placed whole. A gang
preempting lower-priority pods holds the nodes it freed the same way, until its victims are gone.

Holds take at most `hold_share` of the cluster's GPUs, except for the oldest waiting gang of the
highest priority, which takes what it needs (otherwise the widest gangs, the ones that starve,
could never be held for). A node is in one hold at most; a gang of higher priority may take
a node from a lower one's hold, which is then chosen again.

Job durations are never used: only the simulator knows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from extender.book.records import MemoryRecords, PlanRecord, PlanRecords
from extender.book.reservations import GangKey
from extender.cluster.pods import PodKey

Victims = tuple[tuple[str, tuple[PodKey, ...]], ...]
"""Units being evicted, each named with its pods."""


@dataclass
class Hold:
    gang: GangKey
    priority: int
    domain: str
    nodes: frozenset[str]
    gpus: int
    """GPUs the gang's members need on the held nodes."""
    since: float
    """When the hold was made (the planner's clock)."""
    units: Victims = ()
    """The units being evicted for the gang (a preemption), each named with its pods; empty
    for a gang waiting for a drain, and once the victims are gone."""

    @property
    def victims(self) -> frozenset[PodKey]:
        return frozenset(key for _, pods in self.units for key in pods)

    @property
    def label(self) -> str:
        return f"{self.gang[0]}/{self.gang[1]}"

    def progress(self) -> str:
        """What the gang's own members are told."""
        if self.units:
            return (
                f"preempting {', '.join(n for n, _ in self.units)} in {self.domain}; "
                f"{len(self.nodes)} nodes held until they are gone"
            )
        return f"{len(self.nodes)} nodes in {self.domain} held for it while they drain"

    def describe(self) -> str:
        if self.units:
            what = f"preempting {', '.join(n for n, _ in self.units)} ({len(self.victims)} pods)"
        else:
            what = "draining"
        return f"held for gang {self.label} (priority {self.priority}) in {self.domain}: {what}"


def record_of(hold: Hold) -> PlanRecord:
    """The hold as the gang's record, so that the extender serving next keeps it."""
    units = [[name, [list(key) for key in pods]] for name, pods in hold.units]
    info = {"priority": hold.priority, "gpus": hold.gpus, "units": units}
    return PlanRecord(hold.gang, 0, hold.domain, tuple(sorted(hold.nodes)), hold=info)


def hold_of(record: PlanRecord, since: float) -> Hold | None:
    """The hold a record holds; None when it is a plan's record, or not a readable hold."""
    info = record.hold
    if info is None:
        return None
    try:
        units = tuple(
            (str(name), tuple((str(k[0]), str(k[1])) for k in pods)) for name, pods in info["units"]
        )
        return Hold(
            record.gang,
            int(info["priority"]),
            record.domain,
            frozenset(record.slots),
            int(info["gpus"]),
            since,
            units,
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None


class HoldBook:
    """The holds in force, by gang and by node; each written to `records` as it is made and
    removed with it."""

    def __init__(self, records: PlanRecords | None = None) -> None:
        self._records = records or MemoryRecords()
        self._by_gang: dict[GangKey, Hold] = {}
        self._by_node: dict[str, GangKey] = {}

    def __bool__(self) -> bool:
        return bool(self._by_gang)

    def __iter__(self) -> Iterator[Hold]:
        return iter(list(self._by_gang.values()))

    def get(self, gang: GangKey) -> Hold | None:
        return self._by_gang.get(gang)

    def on(self, node: str) -> Hold | None:
        gang = self._by_node.get(node)
        return None if gang is None else self._by_gang[gang]

    def blocking(self, node: str, priority: int, gang: GangKey | None) -> Hold | None:
        """The hold that keeps a pod of `priority` (a member of `gang`, or of none) off the node."""
        hold = self.on(node)
        if hold is None or hold.gang == gang or hold.priority < priority:
            return None
        return hold

    def put(self, hold: Hold) -> list[Hold]:
        """Record the hold; returns the lower-priority holds that lost nodes to it (dropped,
        to be chosen again)."""
        self.remove(hold.gang)
        displaced = {self._by_node[n] for n in hold.nodes if n in self._by_node}
        lost = [self._by_gang[g] for g in displaced]
        for other in lost:
            self.remove(other.gang)
        self.adopt(hold)
        self._records.put(record_of(hold))
        return lost

    def adopt(self, hold: Hold) -> None:
        """Keep a hold read from its record, without writing it again."""
        self._by_gang[hold.gang] = hold
        for node in hold.nodes:
            self._by_node[node] = hold.gang

    def remove(self, gang: GangKey, record: bool = True) -> Hold | None:
        """Forget the gang's hold, and remove its record unless `record` is False (a plan
        made for the gang has written over it)."""
        hold = self._by_gang.pop(gang, None)
        if hold is not None:
            for node in hold.nodes:
                if self._by_node.get(node) == gang:
                    del self._by_node[node]
            if record:
                self._records.remove(gang)
        return hold

    def clear(self) -> None:
        """Forget every hold here only (another process's records are adopted next)."""
        self._by_gang.clear()
        self._by_node.clear()

    def changed(self, hold: Hold) -> None:
        """The hold's victims are gone: write it again without them."""
        self._records.put(record_of(hold))

    def held_gpus(self) -> int:
        return sum(h.gpus for h in self._by_gang.values())

    def nodes(self) -> Mapping[str, GangKey]:
        return self._by_node

    def covering(self, nodes: Iterable[str]) -> set[GangKey]:
        return {self._by_node[n] for n in nodes if n in self._by_node}
