"""What lets a container use the RDMA devices: the RDMA resource, /dev/infiniband, IPC_LOCK.

A container whose RDMA NICs come from a DRA claim gets neither the resource nor the hostPath:
the DRA driver puts the devices into the container itself (through CDI or NRI).
"""

from __future__ import annotations

from kube_rdma.core.objects import Json
from kube_rdma.core.resources import is_rdma
from webhook.podspec import add_mount, mapping, mount_at, requested, sequence
from webhook.profiles import Profile

INFINIBAND_VOLUME = "kube-rdma-infiniband"
INFINIBAND_PATH = "/dev/infiniband"
IPC_LOCK_NAMES = frozenset({"IPC_LOCK", "CAP_IPC_LOCK"})


def counts_as_rdma(resource: str, profile: Profile) -> bool:
    return resource in profile.resources.names() or is_rdma(
        resource, profile.resources.rdma_resources
    )


def add_resources(container: Json, profile: Profile, gpus: int, warnings: list[str]) -> None:
    """Add the profile's RDMA resources to requests and limits, unless the container already
    asks for an RDMA resource (any the profile adds or the admin lists as RDMA). `gpus`: the
    container's GPUs, device-plugin and claimed, which per-rail resources follow."""
    present = [r for r in requested(container) if counts_as_rdma(r, profile)]
    if present:
        foreign = [r for r in present if r not in profile.resources.names()]
        if foreign:
            warnings.append(
                f"kube-rdma: container {container.get('name')} already requests "
                f"{', '.join(foreign)}, so no RDMA resource was added"
            )
        return
    wanted = _wanted_resources(container, profile, gpus, warnings)
    if not wanted:
        return
    resources = mapping(container, "resources")
    for kind in ("requests", "limits"):
        mapping(resources, kind).update({name: str(count) for name, count in wanted.items()})


def _wanted_resources(
    container: Json, profile: Profile, gpus: int, warnings: list[str]
) -> dict[str, int]:
    rails = profile.resources.per_rail
    if rails is None:
        return dict(profile.resources.fixed or {})
    if gpus > len(rails):
        warnings.append(
            f"kube-rdma: container {container.get('name')} requests {gpus} GPUs but the profile "
            f"has {len(rails)} rails; it gets all {len(rails)}"
        )
    if gpus == 0:
        warnings.append(
            f"kube-rdma: container {container.get('name')} requests no GPU, so it gets no "
            "per-rail RDMA resource"
        )
    return {name: 1 for name in rails[:gpus]}


def mount_infiniband(container: Json, warnings: list[str]) -> None:
    if add_mount(container, INFINIBAND_VOLUME, INFINIBAND_PATH):
        return
    own = mount_at(container, INFINIBAND_PATH) or {}
    if own.get("name") != INFINIBAND_VOLUME:
        warnings.append(
            f"kube-rdma: container {container.get('name')} mounts its own /dev/infiniband "
            f"({own.get('name')}); kept as it is"
        )


def add_ipc_lock(container: Json, warnings: list[str]) -> None:
    """Add IPC_LOCK (RDMA pins memory) without touching other capabilities. Kubernetes takes
    names with or without the CAP_ prefix; a privileged container has every capability."""
    security = container.get("securityContext") or {}
    if security.get("privileged"):
        return
    caps = security.get("capabilities") or {}
    if IPC_LOCK_NAMES & set(caps.get("add") or []):
        return
    if IPC_LOCK_NAMES & set(caps.get("drop") or []):
        warnings.append(
            f"kube-rdma: container {container.get('name')} drops IPC_LOCK, so it was not added; "
            "RDMA memory registration fails unless memlock is unlimited"
        )
        return
    sequence(mapping(mapping(container, "securityContext"), "capabilities"), "add").append(
        "IPC_LOCK"
    )
