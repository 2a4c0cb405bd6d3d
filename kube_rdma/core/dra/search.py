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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kube_rdma.core.dra.constraints import Constraint, Tally, TypedValue, typed_value
from kube_rdma.core.dra.demand import Choice, DeviceRequest
from kube_rdma.core.dra.kinds import Kind
from kube_rdma.core.dra.selectors import Outcome, Selectors
from kube_rdma.core.dra.shapes import Device, DeviceId

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
    devices: Sequence[tuple[Device, Kind]],
    held: frozenset[DeviceId],
    judged: Judged,
    limit: int = STEP_LIMIT,
) -> Picks | Stuck | None:
    """The devices for each (claim, request), Stuck, or None when there is no solution.
    `judged` is judge_choices' for these requests and devices."""
    try:
        run = _Search(requests, constraints, devices, held, judged, limit)
        return run.picks() if run.enough() and run.solve(0) else None
    except _Stop as stop:
        return Stuck(stop.reason)


Judged = dict[tuple[tuple[str, ...], Kind], dict[int, Outcome]]


def judge_choices(
    requests: Sequence[DeviceRequest],
    devices: Sequence[tuple[Device, Kind]],
    selectors: Selectors,
) -> Judged:
    """For each distinct (selectors, kind) of the choices, the devices of the kind they match,
    by position in `devices`, each with True or the evaluation error."""
    judged: Judged = {}
    for request in requests:
        for choice in request.choices:
            key = (choice.selectors, choice.kind)
            if key not in judged:
                judged[key] = {
                    i: outcome
                    for i, (device, kind) in enumerate(devices)
                    if kind == choice.kind
                    if (outcome := selectors.judge(choice.selectors, device)) is not False
                }
    return judged


def _candidates(
    requests: Sequence[DeviceRequest],
    devices: Sequence[Device],
    held: frozenset[DeviceId],
    judged: Judged,
) -> list[list[list[tuple[int, Outcome]]]]:
    """Per request and choice, the devices it may take: the free ones its selectors match, or
    for allocationMode All every one they match."""
    free = [d.id not in held for d in devices]
    return [
        [
            [(i, o) for i, o in judged[c.selectors, c.kind].items() if c.all_devices or free[i]]
            for c in r.choices
        ]
        for r in requests
    ]


def _covering(
    constraints: Sequence[Constraint], request: DeviceRequest, choice: Choice
) -> tuple[int, ...]:
    return tuple(
        j
        for j, k in enumerate(constraints)
        if k.covers(request.claim, request.request, choice.subrequest)
    )


def _classes(
    devices: Sequence[tuple[Device, Kind]],
    judged: Judged,
    values: list[list[TypedValue | None]],
) -> list[int]:
    """Per device, its class: devices of one kind that every choice judges alike and that
    carry the same value of every constrained attribute are interchangeable."""
    positions = range(len(devices))
    columns = [[found.get(i, False) for i in positions] for found in judged.values()]
    signatures: dict[tuple[object, ...], int] = {}
    return [
        signatures.setdefault(signature, len(signatures))
        for signature in zip([k for _, k in devices], *columns, *values, strict=True)
    ]


class _Search:
    def __init__(
        self,
        requests: Sequence[DeviceRequest],
        constraints: Sequence[Constraint],
        devices: Sequence[tuple[Device, Kind]],
        held: frozenset[DeviceId],
        judged: Judged,
        limit: int,
    ) -> None:
        self.requests, self.constraints, self.limit = requests, constraints, limit
        self.devices = [d for d, _ in devices]
        self.held = held
        self.candidates = _candidates(requests, self.devices, held, judged)
        self.cover = [[_covering(constraints, r, c) for c in r.choices] for r in requests]
        # The constraints that cover request n or a later one: the rest no longer matter.
        self.live = [
            tuple(sorted({j for q in self.cover[n:] for cs in q for j in cs}))
            for n in range(len(requests) + 1)
        ]
        self.values = [[typed_value(d, k.attribute) for d in self.devices] for k in constraints]
        self.klass = _classes(devices, judged, self.values)
        self.used = [0] * (max(self.klass, default=-1) + 1)
        self.taken: set[int] = set()
        self.tally = Tally(constraints)
        self.chosen: list[list[int]] = [[] for _ in requests]
        self.failed: set[tuple[object, ...]] = set()
        self.steps = 0
        self._check_all_choices()

    def enough(self) -> bool:
        """Whether, kind by kind, the free devices that the exact requests could take number at
        least what those requests need together: a necessary condition, checked first so that
        a node one device short is refused without a search through every way of being
        short."""
        need: dict[Kind, int] = {}
        pool: dict[Kind, set[int]] = {}
        for request, candidates in zip(self.requests, self.candidates, strict=True):
            [*rest, choice] = request.choices
            if rest or choice.all_devices:
                continue
            need[choice.kind] = need.get(choice.kind, 0) + choice.count
            pool.setdefault(choice.kind, set()).update(i for i, _ in candidates[0])
        return all(count <= len(pool[kind]) for kind, count in need.items())

    def _check_all_choices(self) -> None:
        """The allocator evaluates the selectors of every allocationMode All request on every
        device before it searches (validateDeviceRequest); an error there ends it."""
        for r, request in enumerate(self.requests):
            for c, choice in enumerate(request.choices):
                if choice.all_devices:
                    for i, outcome in self.candidates[r][c]:
                        self._require(outcome, request, i)

    def _require(self, outcome: Outcome, request: DeviceRequest, i: int) -> None:
        if isinstance(outcome, str):
            device = self.devices[i]
            raise _Stop(
                f"claim {request.claim} request {request.request}: on device {device.name} "
                f"(pool {device.pool} of {device.driver}): {outcome}"
            )

    def solve(self, r: int) -> bool:
        if r == len(self.requests):
            return True
        for c, choice in enumerate(self.requests[r].choices):
            if self._place_all(r, c) if choice.all_devices else self._place(r, c, 0):
                return True
        return False

    def _place(self, r: int, c: int, k: int) -> bool:
        if k == self.requests[r].choices[c].count:
            return self.solve(r + 1)
        for i, outcome in self.candidates[r][c]:
            if i in self.taken:
                continue
            self._require(outcome, self.requests[r], i)
            if not self._add(r, c, i):
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

    def _place_all(self, r: int, c: int) -> bool:
        members = [i for i, _ in self.candidates[r][c]]
        if not members or any(self.devices[i].id in self.held or i in self.taken for i in members):
            return False
        for n, i in enumerate(members):
            if not self._add(r, c, i):
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

    def _add(self, r: int, c: int, i: int) -> bool:
        covering = self.cover[r][c]
        for n, j in enumerate(covering):
            if not self.tally.admit(j, self.values[j][i]):
                for d in reversed(covering[:n]):
                    self.tally.release(d)
                return False
        self.taken.add(i)
        self.used[self.klass[i]] += 1
        self.chosen[r].append(i)
        return True

    def _remove(self, r: int, c: int, i: int) -> None:
        for j in reversed(self.cover[r][c]):
            self.tally.release(j)
        self.taken.discard(i)
        self.used[self.klass[i]] -= 1
        self.chosen[r].pop()

    def _state(self, r: int, c: int, k: int) -> tuple[object, ...]:
        return r, c, k, tuple(self.used), self.tally.state(self.live[r])

    def picks(self) -> Picks:
        return {
            (request.claim, request.request): tuple(self.devices[i].id for i in self.chosen[r])
            for r, request in enumerate(self.requests)
        }
