"""Which pods a gang preempts, and where. Pure: the caller measures the nodes and gathers the
units; this module only decides.

Like choose.py for plans, the gang goes to the narrowest network domain that can take it, here
once some lower-priority units are gone, over the same levels as its plan: those it requires
or prefers (extender/levels/placement.py), the whole cluster last unless it requires a level.
Within each domain of a level, units on its nodes are
taken least damage first (extender/preemption/priority.py) until the members fit, then each taken
unit is given back, most damaging first, if the members still fit without its eviction (as
kube-scheduler's SelectVictimsOnNode reprieves victims, pkg/scheduler/framework/preemption).
Among the domains of the level, the least damage wins: the lowest highest victim priority,
then the fewest GPUs evicted, then the fewest units.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from extender.gangs.slices import cut
from extender.levels.search import CLUSTER
from extender.preemption.priority import Unit, least_damage_first


@dataclass(frozen=True)
class Room:
    """One node a member could use, with its free resources now (after plans and holds)."""

    labels: Mapping[str, str]
    free: Mapping[str, int]


@dataclass(frozen=True)
class VictimChoice:
    domain: str
    units: tuple[Unit, ...]
    nodes: tuple[str, ...]
    """The nodes the gang's members will take once the victims are gone."""

    @property
    def damage(self) -> tuple[int, int, int]:
        top = max((u.priority for u in self.units), default=0)
        return (top, sum(u.gpus for u in self.units), len(self.units))


def members_on(free: Mapping[str, int], need: Mapping[str, int]) -> int:
    """Members a node with `free` resources takes, each asking `need`."""
    counts = [free.get(r, 0) // amount for r, amount in need.items() if amount > 0]
    return max(min(counts), 0) if counts else 1


@dataclass(frozen=True)
class Slices:
    """A sliced gang: consecutive ranks, `size` at a time, each slice inside one domain of
    `level` (extender/gangs/slices.py)."""

    level: str
    size: int
    sizes: tuple[int, ...] = ()
    """Each slice's members where they differ (a CompositePodGroup's PodGroups)."""


def choose_victims(
    rooms: Mapping[str, Room],
    units: Sequence[Unit],
    need: Mapping[str, int],
    needed: int,
    domains: Sequence[str],
    rank: Callable[[VictimChoice], tuple[object, ...]] | None = None,
    cluster: bool = True,
    slices: Slices | None = None,
) -> VictimChoice | None:
    """The least damaging way to make room for `needed` members, each asking `need`, in a
    domain of `domains` (narrowest first), then the whole cluster unless `cluster` is False
    (a gang that requires a level); with `slices`, room for each slice inside one domain of
    its level. None when evicting every unit given still leaves no such domain room enough.
    `rank` orders the domains of a level (default: least damage)."""
    order = rank or (lambda c: c.damage)
    for label in [*domains, CLUSTER] if cluster else domains:
        found = []
        for value, names in _groups(rooms, label).items():
            space = _Space(names, rooms, need, needed, slices)
            if (choice := _in_domain(value, space, units)) is not None:
                found.append(choice)
        if found:
            return min(found, key=lambda c: (order(c), c.domain))
    return None


def _groups(rooms: Mapping[str, Room], label: str) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name, room in rooms.items():
        value = CLUSTER if label == CLUSTER else room.labels.get(label)
        if value is not None:
            groups.setdefault(value, []).append(name)
    return groups


def _in_domain(domain: str, space: _Space, units: Sequence[Unit]) -> VictimChoice | None:
    touching = [u for u in least_damage_first(units) if space.touches(u)]
    taken: list[Unit] = []
    for unit in touching:
        if space.enough():
            break
        space.evict(unit, 1)
        taken.append(unit)
    if not space.enough():
        return None
    for unit in reversed(list(taken)):
        space.evict(unit, -1)
        if space.enough():
            taken.remove(unit)
        else:
            space.evict(unit, 1)
    nodes = space.fill()
    assert nodes is not None
    return VictimChoice(domain, tuple(taken), tuple(nodes))


class _Space:
    """The domain's nodes with some units evicted: members per node, kept current per unit. A
    claim shared across units counts as free once every pod using it is evicted."""

    def __init__(
        self,
        names: list[str],
        rooms: Mapping[str, Room],
        need: Mapping[str, int],
        needed: int,
        slices: Slices | None,
    ):
        self._need = need
        self._needed = needed
        self._slices = slices
        self._labels = {n: rooms[n].labels for n in names}
        self._free = {n: dict(rooms[n].free) for n in names}
        self._now = {n: members_on(self._free[n], need) for n in names}
        self._count = dict(self._now)
        self.capacity = sum(self._count.values())
        self._gone: Counter[str] = Counter()
        """UID -> how many of the evicted units hold that pod."""
        self._freed: set[str] = set()
        """The shared claims counted free."""

    def touches(self, unit: Unit) -> bool:
        nodes = [*unit.nodes, *(claim.node for claim in unit.shared)]
        return any(n in self._free for n in nodes)

    def evict(self, unit: Unit, sign: int) -> None:
        """Count the unit's resources as free (sign 1) or as used again (sign -1)."""
        for name, amounts in unit.nodes.items():
            self._apply(name, amounts, sign)
        self._gone.update(dict.fromkeys(unit.uids, sign))
        for claim in unit.shared:
            freed = all(self._gone[u] > 0 for u in claim.users)
            if freed != (claim.name in self._freed):
                self._freed.symmetric_difference_update({claim.name})
                self._apply(claim.node, claim.amounts, 1 if freed else -1)

    def _apply(self, name: str, amounts: Mapping[str, int], sign: int) -> None:
        free = self._free.get(name)
        if free is None:
            return
        for resource, amount in amounts.items():
            free[resource] = free.get(resource, 0) + sign * amount
        count = members_on(free, self._need)
        self.capacity += count - self._count[name]
        self._count[name] = count

    def enough(self) -> bool:
        if self.capacity < self._needed:
            return False
        return self._slices is None or self._sliced() is not None

    def fill(self) -> list[str] | None:
        """The nodes the members take: those with room already first, each filled in turn;
        for a sliced gang, slice by slice, each in the tightest domain of its level that
        holds it (as extender/gangs/slices.py places them)."""
        if self._slices is not None:
            return self._sliced()
        return self._take(list(self._count), dict(self._count), self._needed)

    def _sliced(self) -> list[str] | None:
        assert self._slices is not None
        level, size = self._slices.level, self._slices.size
        left = dict(self._count)
        by_domain: dict[str, list[str]] = {}
        for name, labels in self._labels.items():
            if (value := labels.get(level)) is not None:
                by_domain.setdefault(value, []).append(name)
        nodes: list[str] = []
        for want in cut(self._needed, size, self._slices.sizes):
            viable = [
                (room, value)
                for value, names in by_domain.items()
                if (room := sum(left[n] for n in names)) >= want
            ]
            if not viable:
                return None
            nodes += self._take(by_domain[min(viable)[1]], left, want)
        return nodes

    def _take(self, names: list[str], left: dict[str, int], want: int) -> list[str]:
        chosen: list[str] = []
        for name in sorted(names, key=lambda n: (-self._now[n], -left[n], n)):
            if len(chosen) >= want:
                break
            take = min(left[name], want - len(chosen))
            left[name] -= take
            chosen += [name] * take
        return chosen
