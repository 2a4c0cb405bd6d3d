"""ResourceSlices grouped into pools, as the resource.k8s.io API defines them (ResourcePool in
k8s.io/api resource/v1 types.go): the slices of one (driver, pool name) together list the
pool's devices; only the slices of the highest `generation` count; and a pool is complete once
`resourceSliceCount` slices of that generation are seen. An incomplete pool is one whose slices
are still being published or replaced, an invalid one names a device twice: the node says why,
and the allocator treats them as kube-scheduler's does (kube_rdma/core/dra/search.py). A slice
that API validation would refuse counts for nothing, and says why; the node's other slices
still count.

Only node-local pools (`nodeName` set) hold the GPUs and NICs of a node; pools published for
`allNodes` or a `nodeSelector` (network-attached devices) are not read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kube_rdma.core.dra.counters import (
    CounterSet,
    pool_problem,
    read_consumption,
    read_counter_sets,
)
from kube_rdma.core.dra.shapes import Device, read_devices
from kube_rdma.core.dra.taints import read_taints
from kube_rdma.core.objects import Json

PoolKey = tuple[str, str]  # (driver, pool name)


@dataclass(frozen=True)
class SliceEntry:
    pool: PoolKey
    node: str
    generation: int
    count: int
    devices: tuple[Device, ...]
    problem: str = ""
    """Why API validation would refuse the slice (it then counts for nothing), or empty."""
    counter_sets: tuple[CounterSet, ...] = ()
    """Its `sharedCounters` (kube_rdma/core/dra/counters.py)."""


def read_slice(obj: Json) -> SliceEntry | None:
    spec = obj.get("spec") or {}
    node = spec.get("nodeName")
    if not node:
        return None
    pool = spec.get("pool") or {}
    generation, count = pool.get("generation", 0), pool.get("resourceSliceCount", 1)
    devices, extra = _partitions_and_taints(spec, tuple(read_devices(obj)))
    sets = read_counter_sets(spec.get("sharedCounters"), "spec.sharedCounters")
    return SliceEntry(
        pool=(str(spec.get("driver") or ""), str(pool.get("name") or "")),
        node=str(node),
        generation=generation if _whole(generation) else 0,
        count=count if _whole(count) else 1,
        devices=devices,
        problem=_slice_problem(spec, generation, count, devices)
        or extra
        or (sets if isinstance(sets, str) else ""),
        counter_sets=sets if isinstance(sets, tuple) else (),
    )


def _partitions_and_taints(
    spec: Json, devices: tuple[Device, ...]
) -> tuple[tuple[Device, ...], str]:
    """The devices with their `taints` and `consumesCounters` (inside `basic` in v1beta1), and
    the first field of them validation refuses, or empty."""
    raws = [r if isinstance(r, dict) else {} for r in spec.get("devices") or []]
    found, problem = [], ""
    for i, (device, raw) in enumerate(zip(devices, raws, strict=True)):
        basic = raw.get("basic")
        body: Json = basic if isinstance(basic, dict) else raw
        taints = read_taints(body.get("taints"), f"spec.devices[{i}].taints")
        consumes = read_consumption(
            body.get("consumesCounters"), f"spec.devices[{i}].consumesCounters"
        )
        for read in (taints, consumes):
            if isinstance(read, str):
                problem = problem or read
        found.append(
            replace(
                device,
                taints=taints if isinstance(taints, tuple) else (),
                consumes=consumes if isinstance(consumes, tuple) else (),
            )
        )
    return tuple(found), problem


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _slice_problem(
    spec: Json, generation: object, count: object, devices: tuple[Device, ...]
) -> str:
    """The first field ResourceSlice validation refuses (k8s.io/kubernetes pkg/apis/resource/
    validation: driver and pool name required, generation >= 0, resourceSliceCount > 0, device
    names unique within the slice)."""
    if not spec.get("driver"):
        return "spec.driver: required"
    if not (spec.get("pool") or {}).get("name"):
        return "spec.pool.name: required"
    if not _whole(generation) or generation < 0:  # type: ignore[operator]
        return f"spec.pool.generation {generation!r}: must be a whole number >= 0"
    if not _whole(count) or count < 1:  # type: ignore[operator]
        return f"spec.pool.resourceSliceCount {count!r}: must be greater than zero"
    seen: set[str] = set()
    for i, device in enumerate(devices):
        if not device.name:
            return f"spec.devices[{i}].name: required"
        if device.problem:
            return f"spec.devices[{i}]: {device.problem}"
        if device.name in seen:
            return f"spec.devices[{i}].name: duplicate value {device.name!r}"
        seen.add(device.name)
    return ""


@dataclass(frozen=True)
class PoolState:
    devices: tuple[Device, ...]
    incomplete: str | None
    """Why the pool is incomplete (not all its slices of the newest generation seen), or None:
    its devices are not allocated from (1.35 and later) and `All` requests fail."""
    invalid: str | None = None
    """Why the pool is invalid (a device name in two of its slices), or None."""
    counter_sets: tuple[CounterSet, ...] = ()


def pool_state(
    key: PoolKey,
    entries: list[SliceEntry],
    names: list[str] | None = None,
    counters: bool = True,
) -> PoolState:
    """After GatherPools (k8s.io/dynamic-resource-allocation structured/internal/stable/
    pools_stable.go): the newest generation's slices; incomplete when their number is not the
    first one's `resourceSliceCount`; invalid when a device name repeats, or (with `counters`,
    DRAPartitionableDevices on) for its counters (kube_rdma/core/dra/counters.py)."""
    newest = max(e.generation for e in entries)
    current = [e for e in entries if e.generation == newest]
    wanted = current[0].count
    devices = tuple(d for e in current for d in e.devices)
    incomplete = None
    # With partitionable devices off, slices of counter sets only are not read; the pool is
    # complete when the slices read or all its slices number `resourceSliceCount`
    # (GatherPools, then checkSlicesInPool over every slice).
    read = current if counters else [e for e in current if e.devices or not e.counter_sets]
    if wanted not in (len(read), len(current)):
        incomplete = (
            f"pool {key[1]} of {key[0]} is incomplete: {len(current)} of {wanted} "
            f"ResourceSlices of generation {newest} seen"
        )
    seen: set[str] = set()
    invalid = None
    for device in devices:
        if device.name in seen:
            invalid = f"pool {key[1]} of {key[0]} is invalid: duplicate device name {device.name}"
            break
        seen.add(device.name)
    sliced = list(zip(names or [""] * len(entries), entries, strict=True))
    sets = [(n, s) for n, e in sliced if e.generation == newest for s in e.counter_sets]
    consumers = [
        (n, d.name, d.consumes) for n, e in sliced if e.generation == newest for d in e.devices
    ]
    found = pool_problem(sets, consumers) if counters else None
    if invalid is None and found is not None:
        invalid = f"pool {key[1]} of {key[0]} is invalid: {found}"
    return PoolState(devices, incomplete, invalid, tuple(s for _, s in sets))
