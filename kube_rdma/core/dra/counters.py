"""Partitionable devices: the counter sets a pool shares (`sharedCounters`) and what each
device consumes of them (`consumesCounters`), k8s.io/api resource/v1 types.go.

A device that consumes counters is allocatable only while every counter it consumes is still
available in its pool: the set's value, less what the devices allocated claims hold consume,
less what the devices already taken in the same search consume (allocator_stable.go
checkAvailableCounters; going back in the search gives them back). With
DRAPartitionableDevices off such a device is never allocated.

Where the counter sets sit changed: in 1.34 a slice lists its counter sets beside its devices,
and the allocator counts per slice; from 1.35 they sit in slices of their own in the pool,
and the allocator counts per pool (pools_stable.go buildPool). kube-rdma counts per pool in
every version: the two agree unless one pool's slices each define a set of the same name,
which 1.35 refuses and kube-rdma refuses in every version. A pool is invalid (as 1.35 makes
it) when two of its slices define a set of one name, or a device consumes from a set the pool
does not have or a counter its set does not have. A device that consumes more of a counter
than its set has can never be allocated, and the node's notes say so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kube_rdma.core.quantity import QuantityError, parse_quantity

Counters = tuple[tuple[str, Decimal], ...]
"""(counter name, value), sorted by name."""


@dataclass(frozen=True)
class CounterSet:
    name: str
    counters: Counters


@dataclass(frozen=True)
class Consumption:
    counter_set: str
    counters: Counters


def read_counter_sets(raw: object, path: str) -> tuple[CounterSet, ...] | str:
    """A slice's `sharedCounters`, or the first field validation refuses."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return f"{path}: not a list"
    found, names = [], set()
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not entry.get("name"):
            return f"{path}[{i}].name: required"
        name = str(entry["name"])
        if name in names:
            return f"{path}[{i}].name: duplicate value {name!r}"
        names.add(name)
        counters = _counters(entry.get("counters"), f"{path}[{i}].counters")
        if isinstance(counters, str):
            return counters
        found.append(CounterSet(name, counters))
    return tuple(found)


def read_consumption(raw: object, path: str) -> tuple[Consumption, ...] | str:
    """A device's `consumesCounters`, or the first field validation refuses."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        return f"{path}: not a list"
    found = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not entry.get("counterSet"):
            return f"{path}[{i}].counterSet: required"
        counters = _counters(entry.get("counters"), f"{path}[{i}].counters")
        if isinstance(counters, str):
            return counters
        found.append(Consumption(str(entry["counterSet"]), counters))
    return tuple(found)


def _counters(raw: object, path: str) -> Counters | str:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        return f"{path}: not a map"
    found = []
    for name, wrapped in raw.items():
        value = wrapped.get("value") if isinstance(wrapped, dict) else None
        try:
            if not isinstance(value, str | int) or isinstance(value, bool):
                raise QuantityError(f"{value!r}")
            amount = parse_quantity(value)
        except (QuantityError, TypeError, ValueError):
            return f"{path}[{name}].value {value!r}: not a quantity"
        found.append((str(name), amount))
    return tuple(sorted(found))


def pool_problem(
    sets: Sequence[tuple[str, CounterSet]],
    devices: Iterable[tuple[str, str, tuple[Consumption, ...]]],
) -> str | None:
    """Why the pool is invalid for its counters (1.35 buildPool): `sets` are (slice, set) of
    its slices, `devices` (slice, device name, consumption)."""
    by_name: dict[str, CounterSet] = {}
    for _, counter_set in sets:
        if counter_set.name in by_name:
            return f"duplicate counter set name {counter_set.name}"
        by_name[counter_set.name] = counter_set
    for slice_name, device, consumption in devices:
        for n, used in enumerate(consumption):
            found = by_name.get(used.counter_set)
            field = f"ResourceSlice {slice_name} device {device}: consumesCounters[{n}]"
            if found is None:
                return f"{field}.counterSet: counter set {used.counter_set} not found"
            known = dict(found.counters)
            for name, _ in used.counters:
                if name not in known:
                    return (
                        f"{field}.counters[{name}]: counter {name} not found in counter set "
                        f"{used.counter_set}"
                    )
    return None


def overdrawn(sets: Mapping[str, Counters], consumption: Iterable[Consumption]) -> str | None:
    """The first counter a device consumes more of than its set has at all, described."""
    for used in consumption:
        known = dict(sets.get(used.counter_set, ()))
        for name, amount in used.counters:
            if name in known and amount > known[name]:
                return (
                    f"consumes {amount} of counter {name} of counter set {used.counter_set}, "
                    f"which has {known[name]}"
                )
    return None


class CounterTally:
    """What the devices of a search consume, against what each pool has left: `take` a device
    (False, and nothing taken, when a counter would go below zero), `give` it back."""

    def __init__(
        self,
        left: Mapping[tuple[str, str], Mapping[str, Counters]],
        consumes: Sequence[tuple[tuple[str, str], tuple[Consumption, ...]]],
    ) -> None:
        """`left`: by pool, each set's counters less what held devices consume; `consumes`:
        by device position, its pool and consumption."""
        self._left = {
            (pool, name, counter): amount
            for pool, sets in left.items()
            for name, counters in sets.items()
            for counter, amount in counters
        }
        self._consumes = consumes
        self._keys: dict[tuple[str, str], set[tuple[tuple[str, str], str, str]]] = {}
        for key in self._left:
            self._keys.setdefault(key[0], set()).add(key)

    def take(self, i: int) -> bool:
        """As checkAvailableCounters: after taking the device, no counter of its pool may be
        below zero, whether the device consumes it or not."""
        pool, consumption = self._consumes[i]
        if not consumption:
            return True
        self._apply(pool, consumption, -1)
        if any(self._left[key] < 0 for key in self._keys.get(pool, ())):
            self._apply(pool, consumption, 1)
            return False
        return True

    def give(self, i: int) -> None:
        pool, consumption = self._consumes[i]
        self._apply(pool, consumption, 1)

    def _apply(
        self, pool: tuple[str, str], consumption: tuple[Consumption, ...], sign: int
    ) -> None:
        for used in consumption:
            for name, amount in used.counters:
                key = (pool, used.counter_set, name)
                self._left[key] = self._left.get(key, Decimal(0)) + sign * amount
                self._keys.setdefault(pool, set()).add(key)


def left_in_pools(
    sets: Mapping[tuple[str, str], Mapping[str, Counters]],
    held: Iterable[tuple[tuple[str, str], tuple[Consumption, ...]]],
) -> dict[tuple[str, str], dict[str, Counters]]:
    """Each pool's sets less what the held devices (pool, consumption) consume; below zero is
    left as it is (nothing available)."""
    left = {pool: {n: dict(c) for n, c in found.items()} for pool, found in sets.items()}
    for pool, consumption in held:
        for used in consumption:
            counters = left.get(pool, {}).get(used.counter_set)
            if counters is None:
                continue
            for name, amount in used.counters:
                if name in counters:
                    counters[name] -= amount
    return {
        pool: {n: tuple(sorted(c.items())) for n, c in found.items()}
        for pool, found in left.items()
    }
