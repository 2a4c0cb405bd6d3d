"""The /dev/shm that PyTorch DataLoader workers and NCCL need: a memory-backed emptyDir.

The container default is 64 MiB. tmpfs pages count against the memory of the container that
writes them, and the volume is shared by every selected container, so its size follows the
smallest memory limit among them: a fraction of it, within the profile's floor and ceiling, and
never above the limit itself.
"""

from __future__ import annotations

from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import format_bytes
from webhook.podspec import add_mount, memory_limit, mount_at, volume
from webhook.profiles import Shm

SHM_VOLUME = "kube-rdma-shm"
SHM_PATH = "/dev/shm"
_MIB = 1 << 20


def shm_size(containers: list[Json], shm: Shm, warnings: list[str]) -> int:
    """The sizeLimit in bytes, a whole number of MiB (so it reads back from the apiserver
    in the same canonical form)."""
    if shm.size is not None:
        return _whole_mib(shm.size)
    limits = [m for m in (memory_limit(c) for c in containers) if m is not None]
    if not limits:
        warnings.append(
            f"kube-rdma: no memory limit set, so /dev/shm gets the fallback size "
            f"{format_bytes(shm.fallback)}; set a memory limit to size it from that"
        )
        return _whole_mib(shm.fallback)
    limit = min(limits)
    share = int(limit * shm.memory_fraction)
    size = min(max(share, shm.min), shm.max, limit)
    if size != share:
        bound = "the memory limit" if size == limit else "shm.min" if size > share else "shm.max"
        warnings.append(
            f"kube-rdma: /dev/shm is {format_bytes(_whole_mib(size))}, set by {bound} instead "
            f"of {shm.memory_fraction:g} of the {format_bytes(limit)} memory limit"
        )
    return _whole_mib(size)


def _whole_mib(size: int) -> int:
    return max(_MIB, size // _MIB * _MIB)


def mount_shm(container: Json, spec: Json, warnings: list[str]) -> None:
    """Mount kube-rdma's /dev/shm, or keep the container's own (warning when it is unbounded)."""
    if add_mount(container, SHM_VOLUME, SHM_PATH):
        return
    own = mount_at(container, SHM_PATH) or {}
    if own.get("name") == SHM_VOLUME:
        return
    source = (volume(spec, str(own.get("name"))) or {}).get("emptyDir")
    if isinstance(source, dict) and "sizeLimit" not in source:
        warnings.append(
            f"kube-rdma: container {container.get('name')} mounts its own /dev/shm volume "
            f"{own.get('name')} without a sizeLimit; kept as it is"
        )


def shm_source(size: int) -> Json:
    return {"emptyDir": {"medium": "Memory", "sizeLimit": format_bytes(size)}}
