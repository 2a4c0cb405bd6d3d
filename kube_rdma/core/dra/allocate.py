"""Whether a node's free GPUs and NICs can satisfy a pod's pending device requests and their
claims' constraints, and which devices they would get.

The devices are those kube-scheduler's allocator would choose
(k8s.io/dynamic-resource-allocation/structured, allocator.go): requests in order, each choice
of a `firstAvailable` list in order, each request's devices first-fit in the node's order,
backtracking when a later request or a claim's `matchAttribute` or `distinctAttribute`
constraint cannot be met (kube_rdma/core/dra/search.py, with its bound on the work). The
constraints cover only the GPU and NIC requests kube-rdma models: devices of other requests
(a ComputeDomain channel) are left to the DynamicResources filter, so a node refused here is
refused there too.

A device that allows multiple allocations is shared: each result on it consumes part of its
capacity (`consumedCapacity`, with a `shareID`); a device with binding conditions carries them
into the result (kube_rdma/core/dra/capacity.py, binding.py).

A refusal says why, and whether freeing devices could help (`resolvable`: the search succeeds
on the node with nothing held): a short count, as the first request that cannot be met by
first fit alone; else the first constraint that cannot be met even alone, naming its requests
and attribute; else the constraints together. A selector that fails to evaluate on a device the
search reaches, or a search past its bound, refuses the node as unresolvable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from kube_rdma.core.dra.binding import Binding
from kube_rdma.core.dra.candidates import Judged, Pools
from kube_rdma.core.dra.capacity import Amounts, consumed, fits, why_not
from kube_rdma.core.dra.constraints import Constraint
from kube_rdma.core.dra.demand import Choice, DeviceRequest, PodDemand
from kube_rdma.core.dra.gates import SERVED, Gates
from kube_rdma.core.dra.index import NodeDevices
from kube_rdma.core.dra.kinds import Kind
from kube_rdma.core.dra.search import STEP_LIMIT, Stuck, judge_choices, search
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.dra.shapes import Device, DeviceId
from kube_rdma.core.dra.usable import why_blocked


@dataclass(frozen=True)
class Allocation:
    devices: dict[tuple[str, str], tuple[DeviceId, ...]]
    """(claim, request) -> the devices it gets."""
    shared: Mapping[tuple[str, str, DeviceId], Amounts] = field(default_factory=dict)
    """(claim, request, device) -> what the result consumes of a device it shares (the
    result has a `shareID` and this `consumedCapacity`)."""
    binding: Mapping[DeviceId, Binding] = field(default_factory=dict)
    """The devices given that have binding conditions, which their results copy."""


@dataclass(frozen=True)
class Refusal:
    reason: str
    resolvable: bool
    """True when freeing devices on the node could make room."""
    error: bool = False
    """True where kube-scheduler's allocator returns an error (a selector failing on a
    device, a claim over the device limit, an invalid pool), False where it finds no
    allocation."""


def allocate(
    demand: PodDemand,
    node_name: str,
    node: NodeDevices | None,
    selectors: Selectors,
    limit: int = STEP_LIMIT,
    minor: int = 35,
    gates: Gates = SERVED,
) -> Allocation | Refusal:
    """`minor`: the Kubernetes 1.<minor> allocator to follow where versions differ (pools
    that are incomplete or invalid, kube_rdma/core/dra/search.py Pools; which taints count);
    `gates`: the DRA features it follows (kube_rdma/core/dra/gates.py)."""
    for claim, pinned in demand.pinned:
        if pinned != node_name:
            return Refusal(f"claim {claim} is allocated on node {pinned}", resolvable=False)
    if not demand.requests:
        return Allocation({})
    devices = _binding_last(node.published) if node else ()
    held = node.held if node else frozenset()
    shares = node.consumed if node else {}
    if not gates.consumable_capacity:  # a shared result then holds its device whole
        held, shares = held | frozenset(shares), {}
    if node:
        pools = Pools(node.incomplete, node.invalid, minor, gates, node.counter_sets, shares)
    else:
        pools = Pools(minor=minor, gates=gates)
    judged = judge_choices(demand.requests, devices, selectors)
    found = search(demand.requests, demand.constraints, devices, held, judged, limit, pools)
    if isinstance(found, Stuck):
        return Refusal(found.reason, resolvable=False, error=True)
    if found is not None:
        return _allocation(demand, found, devices, gates)
    return _refusal(demand, devices, held, judged, limit, pools)


def _binding_last(
    devices: Sequence[tuple[Device, Kind | None]],
) -> Sequence[tuple[Device, Kind | None]]:
    """The pools with a device that has binding conditions searched after the others
    (pools_incubating.go GatherPools: such devices need work before the pod can bind)."""
    late = {(d.driver, d.pool) for d, _ in devices if d.binding.conditions}
    if not late:
        return devices
    return sorted(devices, key=lambda entry: (entry[0].driver, entry[0].pool) in late)


def _allocation(
    demand: PodDemand,
    found: dict[tuple[str, str], tuple[DeviceId, ...]],
    devices: Sequence[tuple[Device, Kind | None]],
    gates: Gates,
) -> Allocation:
    by_id = {d.id: d for d, _ in devices}
    choices = {
        (r.claim, f"{r.request}/{c.subrequest}" if c.subrequest else r.request): c
        for r in demand.requests
        for c in r.choices
    }
    shared: dict[tuple[str, str, DeviceId], Amounts] = {}
    binding: dict[DeviceId, Binding] = {}
    for (claim, name), ids in found.items():
        for i in ids:
            device = by_id[i]
            if device.multi and gates.consumable_capacity:
                requested = choices[claim, name].capacity or {}
                shared[claim, name, i] = consumed(requested, device.capacities)
            if device.binding.conditions:
                binding[i] = device.binding
    return Allocation(found, shared, binding)


def _refusal(
    demand: PodDemand,
    devices: Sequence[tuple[Device, Kind | None]],
    held: frozenset[DeviceId],
    judged: Judged,
    limit: int,
    pools: Pools,
) -> Refusal:
    def fits(
        constraints: Sequence[Constraint], busy: frozenset[DeviceId], on: Pools = pools
    ) -> bool | Stuck:
        found = search(demand.requests, constraints, devices, busy, judged, limit, on)
        return found if isinstance(found, Stuck) else found is not None

    # Freeing devices frees what shared devices' allocations consume, too.
    resolvable = fits(demand.constraints, frozenset(), replace(pools, consumed={})) is True
    unconstrained = fits((), held) if demand.constraints else False
    if isinstance(unconstrained, Stuck):
        return Refusal(unconstrained.reason, resolvable=False, error=True)
    if not unconstrained:
        return Refusal(_short(demand.requests, devices, held, judged, pools), resolvable)
    where = "free devices" if resolvable else "devices"
    for constraint in demand.constraints:
        if fits((constraint,), held) is not True:
            return Refusal(
                f"claim {constraint.claim}: constraint {constraint.describe()} cannot be met "
                f"by the node's {where}",
                resolvable,
            )
    together = "; ".join(f"{c.claim}: {c.describe()}" for c in demand.constraints)
    return Refusal(
        f"constraints cannot all be met together by the node's {where}: {together}", resolvable
    )


def _short(
    requests: Sequence[DeviceRequest],
    devices: Sequence[tuple[Device, Kind | None]],
    held: frozenset[DeviceId],
    judged: Judged,
    pools: Pools,
) -> str:
    """Why first fit without constraints fails: the first request it cannot meet."""
    taken: set[DeviceId] = set()
    skipped = {k for k, _ in pools.invalid} | (pools.incomplete if pools.minor >= 35 else set())
    usable = frozenset(d.id for d, _ in devices if (d.driver, d.pool) not in skipped)
    for request in requests:
        reasons = []
        for choice in request.choices:
            found = _fit(choice, devices, usable, held | taken, judged, pools)
            if isinstance(found, tuple):
                taken.update(found)
                break
            reasons.append(found)
        else:
            return f"claim {request.claim} request {request.request}: {reasons[0]}"
    return "the requests overlap: no order of first fit meets them all"


def _fit(
    choice: Choice,
    devices: Sequence[tuple[Device, Kind | None]],
    usable: frozenset[DeviceId],
    busy: frozenset[DeviceId],
    judged: Judged,
    pools: Pools,
) -> tuple[DeviceId, ...] | str:
    kind = {"gpu": "GPU", "nic": "RDMA NIC", None: "device"}[choice.kind]
    selected = [
        device
        for i, o in sorted(judged[choice.selectors].items())
        if o is True and (device := devices[i][0]).id in usable
    ]
    matching = selected
    if pools.gates.consumable_capacity:
        requested = choice.capacity or {}
        matching = [d for d in selected if fits(requested, d.capacities, pools.consumed.get(d.id))]
        if selected and not matching:
            first = selected[0]
            why = why_not(requested, first.capacities, pools.consumed.get(first.id))
            return f"no matching {kind} has the capacity asked: on {first.name}, {why}"
    kept = {d.id: why for d in matching if (why := why_blocked(choice, d, pools))}
    free = [d.id for d in matching if d.id not in busy or choice.admin_access]
    if choice.all_devices:
        if not matching:
            return f"no matching {kind} published (allocationMode All)"
        if len(free) < len(matching):
            return f"{len(matching) - len(free)} of {len(matching)} matching {kind}s in use (All)"
        if kept:
            return f"matching {kind} {_kept(kept, list(kept)[:1])} (All)"
        return tuple(free)
    if len(matching) < choice.count:
        return f"node publishes {len(matching)} matching {kind}(s), needs {choice.count}"
    usable_free = [i for i in free if i not in kept]
    if len(usable_free) < choice.count:
        shown = [i for i in free if i in kept]
        why = f": {_kept(kept, shown[:3])}" if shown else ""
        count = f"{len(usable_free)} of {len(matching)} matching {kind}(s) free"
        return f"{count}, needs {choice.count}{why}"
    return tuple(usable_free[: choice.count])


def _kept(kept: dict[DeviceId, str], shown: Sequence[DeviceId]) -> str:
    return "; ".join(f"{i[2]} (pool {i[1]} of {i[0]}) {kept[i]}" for i in shown)
