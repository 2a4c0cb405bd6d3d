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

from dataclasses import dataclass

from kube_rdma.core.dra.shapes import Device, read_devices
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


def read_slice(obj: Json) -> SliceEntry | None:
    spec = obj.get("spec") or {}
    node = spec.get("nodeName")
    if not node:
        return None
    pool = spec.get("pool") or {}
    generation, count = pool.get("generation", 0), pool.get("resourceSliceCount", 1)
    devices = tuple(read_devices(obj))
    return SliceEntry(
        pool=(str(spec.get("driver") or ""), str(pool.get("name") or "")),
        node=str(node),
        generation=generation if _whole(generation) else 0,
        count=count if _whole(count) else 1,
        devices=devices,
        problem=_slice_problem(spec, generation, count, devices),
    )


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


def pool_state(key: PoolKey, entries: list[SliceEntry]) -> PoolState:
    """After GatherPools (k8s.io/dynamic-resource-allocation structured/internal/stable/
    pools_stable.go): the newest generation's slices; incomplete when their number is not the
    first one's `resourceSliceCount`; invalid when a device name repeats."""
    newest = max(e.generation for e in entries)
    current = [e for e in entries if e.generation == newest]
    wanted = current[0].count
    devices = tuple(d for e in current for d in e.devices)
    incomplete = None
    if len(current) != wanted:
        incomplete = (
            f"pool {key[1]} of {key[0]} is incomplete: {len(current)} of {wanted} "
            f"ResourceSlices of generation {newest} seen"
        )
    names: set[str] = set()
    invalid = None
    for device in devices:
        if device.name in names:
            invalid = f"pool {key[1]} of {key[0]} is invalid: duplicate device name {device.name}"
            break
        names.add(device.name)
    return PoolState(devices, incomplete, invalid)
