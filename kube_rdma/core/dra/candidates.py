"""The devices each request of a search may take on a node, and what the node's pools allow,
as kube-scheduler's allocator of each version treats them (k8s.io/dynamic-resource-allocation
structured/internal/stable/allocator_stable.go allocateOne and validateDeviceRequest)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kube_rdma.core.dra.capacity import Amounts, fits
from kube_rdma.core.dra.counters import Counters
from kube_rdma.core.dra.demand import Choice, DeviceRequest
from kube_rdma.core.dra.gates import SERVED, Gates
from kube_rdma.core.dra.selectors import Outcome
from kube_rdma.core.dra.shapes import Device, DeviceId

Judged = dict[tuple[str, ...], dict[int, Outcome]]
"""By selector list, the devices (positions) it matches, each with True or the error."""


@dataclass(frozen=True)
class Pools:
    """What the node's pools allow (NodeDevices'), and which version's allocator decides.

    1.34's allocator takes devices from an incomplete pool and fails when its search reaches
    an invalid one (a device name twice); 1.35 and later skip both and, finding no solution,
    fail when the node has an invalid pool (allocator_stable.go allocateOne, Allocate). An
    `All` request fails on a node with an incomplete or invalid pool in every version."""

    incomplete: frozenset[tuple[str, str]] = frozenset()
    invalid: tuple[tuple[tuple[str, str], str], ...] = ()
    minor: int = 35
    """Kubernetes 1.<minor>'s allocator."""
    gates: Gates = SERVED
    """The DRA features the allocator follows (kube_rdma/core/dra/gates.py)."""
    counter_sets: tuple[tuple[tuple[str, str], tuple[tuple[str, Counters], ...]], ...] = ()
    """By pool, its counter sets (NodeDevices'): kube_rdma/core/dra/usable.py."""
    consumed: Mapping[DeviceId, Amounts] = field(default_factory=dict)
    """What allocated claims sharing a device consume of it (NodeDevices')."""


NO_POOLS = Pools()


def candidates(
    requests: Sequence[DeviceRequest],
    devices: Sequence[Device],
    held: frozenset[DeviceId],
    judged: Judged,
    pools: Pools,
) -> list[list[list[tuple[int, Outcome]]]]:
    """Per request and choice, the devices it may take: the free ones its selectors match of
    the pools the version allocates from (held ones too for adminAccess), or for
    allocationMode All every one they match. Under 1.34 the first device of an invalid pool
    stands for the pool: reaching it ends the search."""
    invalid = dict(pools.invalid)
    skip = set(invalid) | (pools.incomplete if pools.minor >= 35 else set())
    usable = [(d.driver, d.pool) not in skip for d in devices]
    free = [d.id not in held for d in devices]
    poison: dict[int, str] = {}
    if pools.minor < 35:
        first: dict[tuple[str, str], int] = {}
        for i, d in enumerate(devices):
            first.setdefault((d.driver, d.pool), i)
        poison = {first[k]: reason for k, reason in invalid.items() if k in first}
    result = []
    for r in requests:
        per_choice = []
        for c in r.choices:
            found = _usable(judged[c.selectors], c, devices, pools)
            if c.all_devices:
                per_choice.append(list(found.items()))
                continue
            entries = [
                (i, o) for i, o in found.items() if usable[i] and (free[i] or c.admin_access)
            ]
            entries += [(i, f"{POISON}{reason}") for i, reason in poison.items()]
            per_choice.append(sorted(entries))
        result.append(per_choice)
    return result


def _usable(
    found: dict[int, Outcome], choice: Choice, devices: Sequence[Device], pools: Pools
) -> dict[int, Outcome]:
    """Leaves out what the allocator skips before the search: with DRADeviceBindingConditions
    off, a device with binding conditions (isSelectable, before its selectors); with
    DRAConsumableCapacity on, a device the request's capacity does not fit beside what
    allocated claims consume (CmpRequestOverCapacity, after its selectors). 1.34 sizes an
    `All` request without what allocated claims consume, and then fails on a device they
    filled."""
    gates, requested = pools.gates, choice.capacity or {}
    blind = choice.all_devices and pools.minor < 35

    def room(device: Device) -> bool:
        taken = {} if blind else pools.consumed.get(device.id, {})
        return fits(requested, device.capacities, taken)

    return {
        i: o
        for i, o in found.items()
        if (gates.binding_conditions or not devices[i].binding.conditions)
        and (o is not True or not gates.consumable_capacity or room(devices[i]))
    }


POISON = "\0"


def is_poison(outcome: Outcome) -> bool:
    return isinstance(outcome, str) and outcome.startswith(POISON)
