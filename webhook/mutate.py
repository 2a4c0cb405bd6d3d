"""The pure core of the webhook: a pod and a profile in, the RDMA-ready pod out.

`mutate` works on a copy and does no I/O; the JSON patch is computed afterwards from the
request object and the result. Every step is idempotent: it adds only what is missing (volumes
by name, mounts by mountPath, env vars and capabilities by name, networks by namespace/name),
and writes each value in the form the apiserver stores after defaulting, so the webhook applied
to its own stored output, or re-invoked after other webhooks, changes nothing. A value the user
set is never overridden; every item left out or defaulted is explained in a warning.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

import orjson

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import QuantityError, parse_bytes
from webhook import multus
from webhook.env import add_env, nccl_env
from webhook.podsecurity import Item, Level, forbidden
from webhook.podspec import (
    add_mount,
    containers,
    gpu_count,
    mapping,
    mount_at,
    requested,
    sequence,
    volume,
)
from webhook.profiles import ConflictAction, DeviceMode, Profile
from webhook.shm import SHM_VOLUME, mount_shm, shm_size, shm_source

INFINIBAND_VOLUME = "kube-rdma-infiniband"
INFINIBAND_PATH = "/dev/infiniband"
# `type: ""` is what the apiserver's defaulting stores for an unset hostPath type.
INFINIBAND_SOURCE: Json = {"hostPath": {"path": INFINIBAND_PATH, "type": ""}}


class Denied(Exception):
    """The pod cannot be made RDMA-ready as asked; the message says what to change."""


@dataclass
class Mutation:
    """The mutated copy of the pod and the warnings that explain it."""

    pod: Json
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    """Where the pod is created, as far as the mutation needs to know."""

    namespace: str
    level: Level = Level.PRIVILEGED


def mutate(pod: Json, name: str, profile: Profile, target: Target) -> Mutation:
    """Apply profile `name` to a copy of `pod`; raises Denied when that cannot be done."""
    out = Mutation(orjson.loads(orjson.dumps(pod)))
    try:
        _apply(out, name, profile, target)
    except QuantityError as e:
        raise Denied(f"{e}; fix the pod's resources") from e
    return out


def _apply(out: Mutation, name: str, profile: Profile, target: Target) -> None:
    spec, metadata = mapping(out.pod, "spec"), mapping(out.pod, "metadata")
    selected = select_containers(spec, metadata, profile)
    if not selected:
        out.warnings.append(
            f"kube-rdma: no container requests {'/'.join(profile.gpu_resources)}, so nothing was "
            f"added; name the containers in the {keys.CONTAINERS} annotation"
        )
        return
    skipped = _pod_security(name, profile, target, out.warnings)
    size = shm_size(selected, profile.shm, out.warnings) if profile.shm.enabled else None
    for container in selected:
        _add_resources(container, profile, out.warnings)
        if profile.devices is DeviceMode.HOST_PATH and Item.HOST_PATH not in skipped:
            _mount_infiniband(container, out.warnings)
        if profile.ipc_lock and Item.IPC_LOCK not in skipped:
            _add_ipc_lock(container, out.warnings)
        if size is not None:
            mount_shm(container, spec, out.warnings)
        add_env(container, nccl_env(profile), out.warnings)
    _ensure_volumes(spec, size)
    gpus = max(gpu_count(c, profile.gpu_resources) for c in selected)
    _set_network(out.pod, profile, gpus, target.namespace, skipped)
    _set_scheduler(spec, profile, out.warnings)
    mapping(metadata, "annotations")[keys.APPLIED] = applied_record(name, profile)


def applied_record(name: str, profile: Profile) -> str:
    """The `kube-rdma.io/applied` value: which profile, which version of it (its hash), and
    the network mode, which tells the extender the link layer the pod needs."""
    record = {"profile": name, "hash": profile.digest, "network": profile.network.mode.value}
    return orjson.dumps(record).decode()


def select_containers(spec: Json, metadata: Json, profile: Profile) -> list[Json]:
    """The containers to make RDMA-ready: those named by annotation (init containers too),
    else the regular containers that request a GPU."""
    regular = spec.get("containers") or []
    named = (metadata.get("annotations") or {}).get(keys.CONTAINERS)
    if named is None:
        return [c for c in regular if gpu_count(c, profile.gpu_resources) > 0]
    wanted = [n.strip() for n in named.split(",") if n.strip()]
    by_name = {c.get("name"): c for c in [*regular, *(spec.get("initContainers") or [])]}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise Denied(
            f"{keys.CONTAINERS} names {', '.join(unknown)}, which the pod does not have; "
            f"its containers are {', '.join(str(n) for n in by_name)}"
        )
    return [by_name[n] for n in dict.fromkeys(wanted)]


def _pod_security(name: str, profile: Profile, target: Target, warnings: list[str]) -> set[Item]:
    """The items to leave out because the namespace's level forbids them; raises Denied
    instead when the profile says to deny."""
    wanted = {
        item
        for item, on in (
            (Item.IPC_LOCK, profile.ipc_lock),
            (Item.HOST_PATH, profile.devices is DeviceMode.HOST_PATH),
            (Item.HOST_NETWORK, profile.network.host_network),
        )
        if on
    }
    conflicts = forbidden(target.level, wanted)
    if conflicts and profile.pod_security_conflict is ConflictAction.DENY:
        raise Denied(
            f'namespace "{target.namespace}" enforces Pod Security level "{target.level}", which '
            f'forbids what RDMA profile "{name}" adds: {", ".join(conflicts)}. Label the '
            f"namespace pod-security.kubernetes.io/enforce=privileged, or ask the admin for a "
            f"profile without them (ipcLock: false, devices: plugin, hostNetwork: false) or with "
            f"podSecurityConflict: skip"
        )
    for item in conflicts:
        warnings.append(
            f"kube-rdma: left out {item}: Pod Security level {target.level} of namespace "
            f"{target.namespace} forbids it; {_SKIP_CONSEQUENCE[item]}"
        )
    return set(conflicts)


_SKIP_CONSEQUENCE = {
    Item.IPC_LOCK: "RDMA memory registration fails unless memlock is unlimited",
    Item.HOST_PATH: "/dev/infiniband must come from the RDMA device plugin",
    Item.HOST_NETWORK: "RoCE must reach the pod through a Multus network instead",
}


def _is_rdma(resource: str, profile: Profile) -> bool:
    if resource in profile.resources.names():
        return True
    return any(fnmatch.fnmatchcase(resource, p) for p in profile.resources.rdma_resources)


def _add_resources(container: Json, profile: Profile, warnings: list[str]) -> None:
    """Add the profile's RDMA resources to requests and limits, unless the container already
    asks for an RDMA resource (any the profile adds or the admin lists as RDMA)."""
    present = [r for r in requested(container) if _is_rdma(r, profile)]
    if present:
        foreign = [r for r in present if r not in profile.resources.names()]
        if foreign:
            warnings.append(
                f"kube-rdma: container {container.get('name')} already requests "
                f"{', '.join(foreign)}, so no RDMA resource was added"
            )
        return
    wanted = _wanted_resources(container, profile, warnings)
    if not wanted:
        return
    resources = mapping(container, "resources")
    for kind in ("requests", "limits"):
        mapping(resources, kind).update({name: str(count) for name, count in wanted.items()})


def _wanted_resources(container: Json, profile: Profile, warnings: list[str]) -> dict[str, int]:
    rails = profile.resources.per_rail
    if rails is None:
        return dict(profile.resources.fixed or {})
    gpus = gpu_count(container, profile.gpu_resources)
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


def _mount_infiniband(container: Json, warnings: list[str]) -> None:
    if add_mount(container, INFINIBAND_VOLUME, INFINIBAND_PATH):
        return
    own = mount_at(container, INFINIBAND_PATH) or {}
    if own.get("name") != INFINIBAND_VOLUME:
        warnings.append(
            f"kube-rdma: container {container.get('name')} mounts its own /dev/infiniband "
            f"({own.get('name')}); kept as it is"
        )


def _add_ipc_lock(container: Json, warnings: list[str]) -> None:
    """Add IPC_LOCK (RDMA pins memory) without touching other capabilities. Kubernetes takes
    names with or without the CAP_ prefix; a privileged container has every capability."""
    security = container.get("securityContext") or {}
    if security.get("privileged"):
        return
    caps = security.get("capabilities") or {}
    if {"IPC_LOCK", "CAP_IPC_LOCK"} & set(caps.get("add") or []):
        return
    if {"IPC_LOCK", "CAP_IPC_LOCK"} & set(caps.get("drop") or []):
        warnings.append(
            f"kube-rdma: container {container.get('name')} drops IPC_LOCK, so it was not added; "
            "RDMA memory registration fails unless memlock is unlimited"
        )
        return
    sequence(mapping(mapping(container, "securityContext"), "capabilities"), "add").append(
        "IPC_LOCK"
    )


def _ensure_volumes(spec: Json, size: int | None) -> None:
    """Add kube-rdma's volumes that some container mounts; keep our /dev/shm's size current.
    A volume of the user's that merely has one of our names is a conflict, not ours to edit."""
    mounted = {m.get("name") for c in containers(spec) for m in c.get("volumeMounts") or []}
    wanted: dict[str, Json] = {INFINIBAND_VOLUME: INFINIBAND_SOURCE}
    if size is not None:
        wanted[SHM_VOLUME] = shm_source(size)
    for name, source in wanted.items():
        if name not in mounted:
            continue
        current = volume(spec, name)
        if current is None:
            sequence(spec, "volumes").append({"name": name, **source})
        elif name == SHM_VOLUME:
            _refresh_shm(current, source)
        elif (current.get("hostPath") or {}).get("path") != INFINIBAND_PATH:
            raise _reserved(name)


def _refresh_shm(current: Json, source: Json) -> None:
    empty_dir = current.get("emptyDir")
    if not isinstance(empty_dir, dict) or empty_dir.get("medium") != "Memory":
        raise _reserved(SHM_VOLUME)
    wanted = source["emptyDir"]["sizeLimit"]
    size = empty_dir.get("sizeLimit")
    if size is None or parse_bytes(size) != parse_bytes(wanted):
        empty_dir["sizeLimit"] = wanted


def _reserved(name: str) -> Denied:
    return Denied(f"the pod has its own volume named {name}, a name kube-rdma reserves; rename it")


def _set_network(
    pod: Json, profile: Profile, gpus: int, namespace: str, skipped: set[Item]
) -> None:
    network, spec = profile.network, pod["spec"]
    if network.host_network and Item.HOST_NETWORK not in skipped and not spec.get("hostNetwork"):
        spec["hostNetwork"] = True
        # Without this a hostNetwork pod resolves names with the node's resolver and cannot
        # reach cluster Services (its job's headless Service included).
        if spec.get("dnsPolicy", "ClusterFirst") == "ClusterFirst":
            spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if not network.networks:
        return
    wanted = list(network.networks[: max(gpus, 1)] if network.per_gpu else network.networks)
    annotations = mapping(mapping(pod, "metadata"), "annotations")
    try:
        merged = multus.merge(annotations.get(multus.NETWORKS_ANNOTATION), wanted, namespace)
    except multus.NetworksError as e:
        raise Denied(f"{e}; fix the annotation so kube-rdma can add the rail networks") from e
    if merged is not None:
        annotations[multus.NETWORKS_ANNOTATION] = merged


def _set_scheduler(spec: Json, profile: Profile, warnings: list[str]) -> None:
    wanted, current = profile.scheduler_name, spec.get("schedulerName")
    if wanted is None or current == wanted:
        return
    if current in (None, "default-scheduler"):
        spec["schedulerName"] = wanted
        return
    warnings.append(
        f"kube-rdma: pod uses scheduler {current}, not {wanted}; RDMA-aware placement is skipped"
    )
