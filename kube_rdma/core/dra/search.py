"""The search for devices that satisfy a pod's pending requests and their claims' constraints,
in kube-scheduler's allocator's order (k8s.io/dynamic-resource-allocation/structured,
internal/stable/allocator_stable.go allocateOne): request after request, each `firstAvailable`
choice in order, each device of a request tried in the node's order, and back to the last
choice when a later request or a constraint cannot be met. The first complete solution wins,
so the devices found are the allocator's.

The allocator's search is exhaustive and can take exponential time; kube-scheduler bounds it
with the DynamicResources filter's `filterTimeout` (10 s by default in 1.34). Two things keep
this one small without changing which solution comes first:

- free devices that no request, choice or constrained attribute tells apart are one class, and
  which member of a class is taken does not matter to what follows;
- a state found to lead nowhere (the position in the search, how many devices of each class
  are taken, the values the constraints still in play are bound to) is remembered and not
  searched again.

What is left is bounded by `limit` devices tried; past it the search gives up and the node is
refused as unresolvable, as 1.34's filter refuses a node on its timeout
(UnschedulableAndUnresolvable "timed out trying to allocate devices",
pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go Filter).
A CEL evaluation error on a device the search reaches ends it too, as it ends the allocator's.
The search covers every device of the node, whatever its kind; a claim holds at most
CLAIM_LIMIT devices; an `adminAccess` request may take a device in use, or one another claim
of the pod takes, but not one its own claim takes (allocateDevice). A device that allows
multiple allocations (consumable capacity) may be taken by several requests, each consuming
part of its capacity (kube_rdma/core/dra/capacity.py); it is a class of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kube_rdma.core.dra.candidates import (
    NO_POOLS,
    POISON,
    Judged,
    Pools,
    candidates,
    is_poison,
)
from kube_rdma.core.dra.capacity import Amounts, add, consumed, fits
from kube_rdma.core.dra.constraints import Constraint, Tally, TypedValue, typed_value
from kube_rdma.core.dra.demand import Choice, DeviceRequest
from kube_rdma.core.dra.kinds import Kind
from kube_rdma.core.dra.selectors import Outcome, Selectors
from kube_rdma.core.dra.shapes import Device, DeviceId
from kube_rdma.core.dra.usable import blocked, tally

CLAIM_LIMIT = 32
"""Devices one claim's allocation may hold (resource.k8s.io AllocationResultsMaxSize, 32 in
every version from 1.32 to 1.37): the allocator refuses a claim whose requests need more
before it searches, and skips a choice that would take a claim past it
(allocator_stable.go Allocate and allocateOne)."""

STEP_LIMIT = 10_000
"""Devices tried before giving up: well past what a claim of GPUs and NICs needs (an 8-pair
claim with a constraint per pair takes 16 on a free node, and a few hundred on a node one NIC
short before the count check), and about 60 ms of CPU at some 6 us a step."""

Picks = dict[tuple[str, str], tuple[DeviceId, ...]]


@dataclass(frozen=True)
class Stuck:
    """The search ended without an answer: a selector failed, or the bound was hit."""

    reason: str


class _Stop(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def search(
    requests: Sequence[DeviceRequest],
    constraints: Sequence[Constraint],
    devices: Sequence[tuple[Device, Kind | None]],
    held: frozenset[DeviceId],
    judged: Judged,
    limit: int = STEP_LIMIT,
    pools: Pools = NO_POOLS,
) -> Picks | Stuck | None:
    """The devices for each (claim, request), Stuck, or None when there is no solution.
    `judged` is judge_choices' for these requests and devices."""
    try:
        run = _Search(requests, constraints, devices, held, judged, limit, pools)
        if run.enough() and run.solve(0):
            return run.picks()
    except _Stop as stop:
        return Stuck(stop.reason)
    if pools.minor >= 35 and pools.invalid:
        return Stuck(f"invalid resource pools were encountered: {pools.invalid[0][1]}")
    return None


def judge_choices(
    requests: Sequence[DeviceRequest],
    devices: Sequence[tuple[Device, Kind | None]],
    selectors: Selectors,
) -> Judged:
    """For each distinct selector list of the choices, the devices it matches, whatever their
    kind, by position in `devices`, each with True or the evaluation error."""
    judged: Judged = {}
    for request in requests:
        for choice in request.choices:
            if choice.selectors not in judged:
                judged[choice.selectors] = {
                    i: outcome
                    for i, (device, _) in enumerate(devices)
                    if (outcome := selectors.judge(choice.selectors, device)) is not False
                }
    return judged


def _covering(
    constraints: Sequence[Constraint], request: DeviceRequest, choice: Choice
) -> tuple[int, ...]:
    return tuple(
        j
        for j, k in enumerate(constraints)
        if k.covers(request.claim, request.request, choice.subrequest)
    )


def _classes(
    devices: Sequence[tuple[Device, Kind | None]],
    judged: Judged,
    values: list[list[TypedValue | None]],
    apart: Sequence[object],
) -> list[int]:
    """Per device, its class: devices that every choice judges alike, that carry the same
    value of every constrained attribute and the same `apart` (held, of a pool the search
    skips) are interchangeable."""
    positions = range(len(devices))
    columns = [[found.get(i, False) for i in positions] for found in judged.values()]
    signatures: dict[tuple[object, ...], int] = {}
    return [
        signatures.setdefault(signature, len(signatures))
        for signature in zip(apart, *columns, *values, strict=True)
    ]


class _Search:
    def __init__(
        self,
        requests: Sequence[DeviceRequest],
        constraints: Sequence[Constraint],
        devices: Sequence[tuple[Device, Kind | None]],
        held: frozenset[DeviceId],
        judged: Judged,
        limit: int,
        pools: Pools,
    ) -> None:
        self.requests, self.constraints, self.limit = requests, constraints, limit
        self.devices = [d for d, _ in devices]
        self.held, self.pools = held, pools
        self.candidates = candidates(requests, self.devices, held, judged, pools)
        self.poison = {i for per in self.candidates for c in per for i, o in c if is_poison(o)}
        claims: dict[str, int] = {}
        self.claim = [claims.setdefault(r.claim, len(claims)) for r in requests]
        self.per_claim = [0] * len(claims)
        self.cover = [[_covering(constraints, r, c) for c in r.choices] for r in requests]
        # The constraints that cover request n or a later one: the rest no longer matter.
        self.live = [
            tuple(sorted({j for q in self.cover[n:] for cs in q for j in cs}))
            for n in range(len(requests) + 1)
        ]
        self.values = [[typed_value(d, k.attribute) for d in self.devices] for k in constraints]
        skipped = {k for k, _ in pools.invalid} | pools.incomplete
        self.multi = [d.multi and pools.gates.consumable_capacity for d in self.devices]
        self.taking: dict[int, list[Amounts]] = {}
        """Per shared device (position), what the search's choices consume of it."""
        apart = [
            (d.id in held, (d.driver, d.pool) in skipped, i if i in self.poison or m else -1)
            + ((d.taints, d.driver, d.pool, d.consumes) if d.taints or d.consumes else ())
            for i, (d, m) in enumerate(zip(self.devices, self.multi, strict=True))
        ]
        self.blocked = blocked(requests, self.devices, pools)
        self.counters = tally(self.devices, held, pools)
        self.klass = _classes(devices, judged, self.values, apart)
        self.used = [0] * (max(self.klass, default=-1) + 1)
        self.owners: dict[int, list[int]] = {}
        """Device position -> the claims (by index) the search gives it to."""
        self.tally = Tally(constraints)
        self.chosen: list[list[int]] = [[] for _ in requests]
        self.selected = [0] * len(requests)
        self.failed: set[tuple[object, ...]] = set()
        self.steps = 0
        self._check_capacity_gate()
        self._check_all_choices()
        self._check_claim_sizes()

    def enough(self) -> bool:
        """Whether, kind by kind, the free devices that the exact requests could take number at
        least what those requests need together: a necessary condition, checked first so that
        a node one device short is refused without a search through every way of being
        short."""
        if any(self.multi):
            return True  # a shared device may serve several requests
        need: dict[Kind | None, int] = {}
        pool: dict[Kind | None, set[int]] = {}
        for request, found in zip(self.requests, self.candidates, strict=True):
            [*rest, choice] = request.choices
            if rest or choice.all_devices or choice.admin_access:
                continue
            need[choice.kind] = need.get(choice.kind, 0) + choice.count
            pool.setdefault(choice.kind, set()).update(i for i, _ in found[0])
        return all(count <= len(pool[kind]) for kind, count in need.items())

    def _check_capacity_gate(self) -> None:
        """With DRAConsumableCapacity off, a request with `capacity` is an error
        (allocator_incubating.go Allocate)."""
        if self.pools.gates.consumable_capacity:
            return
        for request in self.requests:
            for choice in request.choices:
                if choice.capacity is not None:
                    which = f"subrequest {choice.subrequest}" if choice.subrequest else ""
                    raise _Stop(
                        f"claim {request.claim}, {which or f'request {request.request}'}: has "
                        "capacity requests, but the DRAConsumableCapacity feature is disabled"
                    )

    def _check_all_choices(self) -> None:
        """The allocator evaluates the selectors of every allocationMode All request on every
        device before it searches, and refuses one on a node with an incomplete or invalid
        pool (validateDeviceRequest); an error there ends it."""
        broken = sorted(self.pools.incomplete) + [k for k, _ in self.pools.invalid]
        for r, request in enumerate(self.requests):
            for c, choice in enumerate(request.choices):
                if not choice.all_devices:
                    continue
                if broken:
                    state = "being updated" if broken[0] in self.pools.incomplete else "invalid"
                    raise _Stop(
                        f"claim {request.claim} request {request.request}: asks for all "
                        f"devices, but resource pool {broken[0][0]}/{broken[0][1]} is "
                        f"currently {state}"
                    )
                for i, outcome in self.candidates[r][c]:
                    self._require(outcome, request, i)

    def _check_claim_sizes(self) -> None:
        """Per claim, the fewest devices its requests can take (each `firstAvailable` list's
        smallest choice, an `All` request's matching devices) against CLAIM_LIMIT."""
        need: dict[str, int] = {}
        for r, request in enumerate(self.requests):
            fewest = min(
                len(self.candidates[r][c]) if choice.all_devices else choice.count
                for c, choice in enumerate(request.choices)
            )
            need[request.claim] = need.get(request.claim, 0) + fewest
        for claim, count in need.items():
            if count > CLAIM_LIMIT:
                raise _Stop(
                    f"claim {claim}: number of requested devices {count} exceeds the claim "
                    f"limit of {CLAIM_LIMIT}"
                )

    def _require(self, outcome: Outcome, request: DeviceRequest, i: int) -> None:
        if isinstance(outcome, str):
            if is_poison(outcome):
                raise _Stop(outcome[len(POISON) :])
            device = self.devices[i]
            raise _Stop(
                f"claim {request.claim} request {request.request}: on device {device.name} "
                f"(pool {device.pool} of {device.driver}): {outcome}"
            )

    def solve(self, r: int) -> bool:
        if r == len(self.requests):
            return True
        for c, choice in enumerate(self.requests[r].choices):
            self.selected[r] = c
            if self._place_all(r, c) if choice.all_devices else self._place(r, c, 0):
                return True
        return False

    def _place(self, r: int, c: int, k: int) -> bool:
        choice = self.requests[r].choices[c]
        if k == choice.count:
            return self.solve(r + 1)
        if self.per_claim[self.claim[r]] + choice.count - k > CLAIM_LIMIT:
            return False
        for i, outcome in self.candidates[r][c]:
            if not self._free_for(r, c, i):
                continue
            self._require(outcome, self.requests[r], i)
            if i in self.blocked[r][c] or not self._take(i):
                continue
            if not self._add(r, c, i):
                self._give(i)
                continue
            state = self._state(r, c, k + 1)
            if state not in self.failed:
                self.steps += 1
                if self.steps > self.limit:
                    raise _Stop(
                        f"gave up after trying {self.limit} devices for the pod's claims "
                        "(kube-scheduler's DynamicResources filter gives up on its timeout too)"
                    )
                if self._place(r, c, k + 1):
                    return True
                self.failed.add(state)
            self._remove(r, c, i)
        return False

    def _free_for(self, r: int, c: int, i: int) -> bool:
        """Not given to another request already; an adminAccess request only needs it not
        given to its own claim (allocateDevice)."""
        if self.multi[i]:
            return i not in self.chosen[r]  # a request takes a device once
        owners = self.owners.get(i)
        if not owners:
            return True
        return self.requests[r].choices[c].admin_access and self.claim[r] not in owners

    def _place_all(self, r: int, c: int) -> bool:
        members = [i for i, _ in self.candidates[r][c]]
        if not members:
            return False
        if self.per_claim[self.claim[r]] + len(members) > CLAIM_LIMIT:
            return False
        admin = self.requests[r].choices[c].admin_access
        in_use = [self.devices[i].id in self.held and not admin for i in members]
        if any(in_use) or not all(self._free_for(r, c, i) for i in members):
            return False
        if any(i in self.blocked[r][c] for i in members):
            return False
        for n, i in enumerate(members):
            if not self._room(r, c, i) or not self._take(i):
                for j in reversed(members[:n]):
                    self._remove(r, c, j)
                return False
            if not self._add(r, c, i):
                self._give(i)
                for j in reversed(members[:n]):
                    self._remove(r, c, j)
                request, device = self.requests[r], self.devices[i]
                raise _Stop(
                    f"claim {request.claim} request {request.request} (allocationMode All): "
                    f"device {device.name} breaks a constraint of the claim"
                )
        if self.solve(r + 1):
            return True
        for i in reversed(members):
            self._remove(r, c, i)
        return False

    def _room(self, r: int, c: int, i: int) -> bool:
        """Whether a shared device has the request's capacity left beside what allocated
        claims and the search's earlier choices consume (CmpRequestOverCapacity)."""
        if not self.multi[i]:
            return True
        device, taken = self.devices[i], self.pools.consumed.get(self.devices[i].id, {})
        for amounts in self.taking.get(i, ()):
            taken = add(taken, amounts)
        requested = self.requests[r].choices[c].capacity or {}
        return fits(requested, device.capacities, taken)

    def _counted(self, i: int) -> bool:
        """Whether what a shared device consumes of its pool's counters is counted already:
        it is given to another request of the search, or allocated claims share it. A device
        consumes its counters once, however many results share it."""
        return self.multi[i] and (i in self.owners or self.devices[i].id in self.pools.consumed)

    def _take(self, i: int) -> bool:
        """Takes what the device consumes of its pool's counters, unless none is left."""
        return self._counted(i) or self.counters.take(i)

    def _give(self, i: int) -> None:
        """Gives back what the device consumes of its pool's counters, once nothing of the
        search holds it."""
        if not self._counted(i):
            self.counters.give(i)

    def _add(self, r: int, c: int, i: int) -> bool:
        if not self._room(r, c, i):
            return False
        covering = self.cover[r][c]
        for n, j in enumerate(covering):
            if not self.tally.admit(j, self.values[j][i]):
                for d in reversed(covering[:n]):
                    self.tally.release(d)
                return False
        self.owners.setdefault(i, []).append(self.claim[r])
        if self.multi[i]:
            requested = self.requests[r].choices[c].capacity or {}
            self.taking.setdefault(i, []).append(consumed(requested, self.devices[i].capacities))
        self.used[self.klass[i]] += 1
        self.per_claim[self.claim[r]] += 1
        self.chosen[r].append(i)
        return True

    def _remove(self, r: int, c: int, i: int) -> None:
        for j in reversed(self.cover[r][c]):
            self.tally.release(j)
        owners = self.owners[i]
        owners.pop()
        if not owners:
            del self.owners[i]
        self._give(i)
        if self.multi[i]:
            self.taking[i].pop()
        self.used[self.klass[i]] -= 1
        self.per_claim[self.claim[r]] -= 1
        self.chosen[r].pop()

    def _state(self, r: int, c: int, k: int) -> tuple[object, ...]:
        return (
            r,
            c,
            k,
            tuple(self.used),
            self.per_claim[self.claim[r]],
            self.tally.state(self.live[r]),
            tuple(
                (i, tuple(tuple(sorted(a.items())) for a in taken))
                for i, taken in self.taking.items()
                if taken
            ),
        )

    def picks(self) -> Picks:
        """By (claim, request), the request named `request/subrequest` where a
        `firstAvailable` choice was taken, as the allocation result names it."""
        picks: Picks = {}
        for r, request in enumerate(self.requests):
            sub = request.choices[self.selected[r]].subrequest
            name = f"{request.request}/{sub}" if sub else request.request
            picks[request.claim, name] = tuple(self.devices[i].id for i in self.chosen[r])
        return picks
