"""What keeps a device that a request's selectors match from the request, besides being in
use: its taints, and the counters it consumes (allocator_stable.go allocateDevice, in its
order: in use, counters with partitionable devices off, counters left, taints, then the
claim's constraints).

Taints and the gate are fixed for a search, so they are judged once per choice (`blocked`);
counters depend on what the search has taken, so a CounterTally follows them (`tally`)."""

from __future__ import annotations

from collections.abc import Sequence

from kube_rdma.core.dra.candidates import Pools
from kube_rdma.core.dra.counters import CounterTally, left_in_pools
from kube_rdma.core.dra.demand import Choice, DeviceRequest
from kube_rdma.core.dra.shapes import Device, DeviceId
from kube_rdma.core.dra.taints import untolerated

Blocked = list[list[dict[int, str]]]
"""Per request and choice: device position -> why it cannot be given to that choice."""


def blocked(requests: Sequence[DeviceRequest], devices: Sequence[Device], pools: Pools) -> Blocked:
    return [[_blocked(choice, devices, pools) for choice in r.choices] for r in requests]


def _blocked(choice: Choice, devices: Sequence[Device], pools: Pools) -> dict[int, str]:
    found = {}
    for i, device in enumerate(devices):
        if why := why_blocked(choice, device, pools):
            found[i] = why
    return found


def why_blocked(choice: Choice, device: Device, pools: Pools) -> str:
    """Why the choice cannot have the device whatever else is taken, or empty."""
    if device.consumes and not pools.gates.partitionable_devices:
        return "consumes counters (DRAPartitionableDevices off)"
    if pools.gates.device_taints:
        taint = untolerated(device.taints, choice.tolerations, pools.minor)
        if taint is not None:
            return f"tainted {taint.describe()}, not tolerated"
    return ""


def tally(devices: Sequence[Device], held: frozenset[DeviceId], pools: Pools) -> CounterTally:
    """What the pools' counters have left beside the devices allocated claims hold or share."""
    sets = {pool: dict(found) for pool, found in pools.counter_sets}
    allocated = held | pools.consumed.keys()
    left = left_in_pools(
        sets, [((d.driver, d.pool), d.consumes) for d in devices if d.id in allocated]
    )
    return CounterTally(left, [((d.driver, d.pool), d.consumes) for d in devices])
