"""Reading and editing raw pod dicts safely.

Pods arrive as JSON from the apiserver, where any optional field may be absent or null. These
helpers read through both, and create a field only when something is written to it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import parse_bytes, parse_quantity


def mapping(parent: Json, key: str) -> Json:
    """`parent[key]` as a dict, created (or replacing a null) when missing."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def sequence(parent: Json, key: str) -> list[Any]:
    """`parent[key]` as a list, created (or replacing a null) when missing."""
    value = parent.get(key)
    if not isinstance(value, list):
        value = []
        parent[key] = value
    return value


def containers(spec: Json) -> list[Json]:
    return [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]


def requested(container: Json) -> dict[str, Any]:
    """Requests and limits together (a limit alone implies the request)."""
    resources = container.get("resources") or {}
    return {**(resources.get("requests") or {}), **(resources.get("limits") or {})}


def gpu_count(container: Json, gpu_resources: Iterable[str]) -> int:
    """GPUs the container asks for; raises QuantityError for an unreadable amount."""
    amounts = requested(container)
    return sum(int(parse_quantity(amounts[name])) for name in gpu_resources if name in amounts)


def memory_limit(container: Json) -> int | None:
    limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    return None if limit is None else parse_bytes(limit)


def mount_at(container: Json, path: str) -> Json | None:
    """The container's mount at `path` (`/dev/shm/` and `/dev/shm` are the same place)."""
    mounts: list[Json] = container.get("volumeMounts") or []
    for mount in mounts:
        if posixpath.normpath(str(mount.get("mountPath") or "")) == path:
            return mount
    return None


def add_mount(container: Json, volume: str, path: str) -> bool:
    """Mount `volume` at `path` unless something is mounted there; True when added."""
    if mount_at(container, path) is not None:
        return False
    sequence(container, "volumeMounts").append({"name": volume, "mountPath": path})
    return True


def volume(spec: Json, name: str) -> Json | None:
    volumes: list[Json] = spec.get("volumes") or []
    for entry in volumes:
        if entry.get("name") == name:
            return entry
    return None
