"""ResourceSlices grouped into pools, as the resource.k8s.io API defines them (ResourcePool in
k8s.io/api resource/v1 types.go): the slices of one (driver, pool name) together list the
pool's devices; only the slices of the highest `generation` count; and a pool is complete once
`resourceSliceCount` slices of that generation are seen. An incomplete pool is one whose slices
are still being published or replaced: its devices are not counted yet, and the node says why.

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


def read_slice(obj: Json) -> SliceEntry | None:
    spec = obj.get("spec") or {}
    node = spec.get("nodeName")
    if not node:
        return None
    pool = spec.get("pool") or {}
    return SliceEntry(
        pool=(str(spec.get("driver") or ""), str(pool.get("name") or "")),
        node=str(node),
        generation=int(pool.get("generation") or 0),
        count=int(pool.get("resourceSliceCount") or 1),
        devices=tuple(read_devices(obj)),
    )


@dataclass(frozen=True)
class PoolState:
    devices: tuple[Device, ...]
    incomplete: str | None
    """Why the pool's devices do not count yet, or None."""


def pool_state(key: PoolKey, entries: list[SliceEntry]) -> PoolState:
    newest = max(e.generation for e in entries)
    current = [e for e in entries if e.generation == newest]
    wanted = max(e.count for e in current)
    if len(current) < wanted:
        return PoolState(
            (),
            f"pool {key[1]} of {key[0]} is incomplete: {len(current)} of {wanted} "
            f"ResourceSlices of generation {newest} seen",
        )
    return PoolState(tuple(d for e in current for d in e.devices), None)
