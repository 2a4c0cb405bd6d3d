"""The pure core of the webhook: a pod and a profile in, the RDMA-ready pod out.

`mutate` works on a copy and does no I/O; the JSON patch is computed afterwards from the
request object and the result. Every step is idempotent: it adds only what is missing (volumes
by name, mounts by mountPath, env vars and capabilities by name, networks by namespace/name),
so the webhook applied to its own output, or re-invoked after other webhooks, changes nothing.
A value the user set is never overridden; every item left out or defaulted is explained in a
warning.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from extender import keys
from extender.quantity import QuantityError, format_bytes, parse_bytes, parse_quantity
from webhook import multus
from webhook.podsecurity import Item, Level, forbidden
from webhook.profiles import ConflictAction, DeviceMode, GidStrategy, Profile

Json = dict[str, Any]

INFINIBAND_VOLUME = "kube-rdma-infiniband"
INFINIBAND_PATH = "/dev/infiniband"
SHM_VOLUME = "kube-rdma-shm"
SHM_PATH = "/dev/shm"
_MIB = 1 << 20


class Denied(Exception):
    """The pod cannot be made RDMA-ready as asked; the message says what to change."""


@dataclass
class Outcome:
    pod: Json
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    """Where the pod is created, as far as the mutation needs to know."""

    namespace: str
    level: Level = Level.PRIVILEGED


def mutate(pod: Json, name: str, profile: Profile, target: Target) -> Outcome:
    """Apply profile `name` to a copy of `pod`; raises Denied when that cannot be done."""
    out = Outcome(orjson.loads(orjson.dumps(pod)))
    spec = out.pod.setdefault("spec", {})
    containers = select_containers(spec, out.pod.get("metadata", {}), profile)
    if not containers:
        out.warnings.append(
            f"kube-rdma: no container requests {'/'.join(profile.gpu_resources)}, so nothing was "
            f"added; name the containers in the {keys.CONTAINERS} annotation"
        )
        return out
    skipped = _pod_security(name, profile, target, out.warnings)
    gpus = max(gpu_count(c, profile) for c in containers)
    shm_size = _shm_size(containers, profile, out.warnings) if profile.shm.enabled else None
    for container in containers:
        _add_resources(container, profile, out.warnings)
        if profile.devices is DeviceMode.HOST_PATH and Item.HOST_PATH not in skipped:
            _add_mount(container, INFINIBAND_VOLUME, INFINIBAND_PATH)
        if profile.ipc_lock and Item.IPC_LOCK not in skipped:
            _add_ipc_lock(container, out.warnings)
        if shm_size is not None:
            _add_shm_mount(container, spec, out.warnings)
        _add_env(container, nccl_env(profile), out.warnings)
    _ensure_volumes(spec, shm_size)
    _set_network(out.pod, profile, gpus, target.namespace, skipped)
    _set_scheduler(spec, profile, out.warnings)
    annotations = out.pod.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[keys.APPLIED] = applied_record(name, profile)
    return out


def applied_record(name: str, profile: Profile) -> str:
    record = {"profile": name, "hash": profile.digest, "network": profile.network.mode.value}
    return orjson.dumps(record).decode()


def select_containers(spec: Json, metadata: Json, profile: Profile) -> list[Json]:
    """The containers to make RDMA-ready: those named by annotation, else the GPU containers."""
    regular = spec.get("containers") or []
    named = (metadata.get("annotations") or {}).get(keys.CONTAINERS)
    if named is None:
        return [c for c in regular if gpu_count(c, profile) > 0]
    wanted = [n.strip() for n in named.split(",") if n.strip()]
    by_name = {c.get("name"): c for c in [*regular, *(spec.get("initContainers") or [])]}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise Denied(
            f"{keys.CONTAINERS} names {', '.join(unknown)}, which the pod does not have; "
            f"its containers are {', '.join(str(n) for n in by_name)}"
        )
    return [by_name[n] for n in dict.fromkeys(wanted)]


def _requested(container: Json) -> dict[str, Any]:
    resources = container.get("resources") or {}
    return {**(resources.get("requests") or {}), **(resources.get("limits") or {})}


def gpu_count(container: Json, profile: Profile) -> int:
    requested = _requested(container)
    total = 0
    for name in profile.gpu_resources:
        if name in requested:
            try:
                total += int(parse_quantity(requested[name]))
            except QuantityError as e:
                raise Denied(f"container {container.get('name')}: {name}: {e}") from e
    return total


def _pod_security(name: str, profile: Profile, target: Target, warnings: list[str]) -> set[Item]:
    """The items to leave out because the namespace's level forbids them (or deny)."""
    wanted = set()
    if profile.ipc_lock:
        wanted.add(Item.IPC_LOCK)
    if profile.devices is DeviceMode.HOST_PATH:
        wanted.add(Item.HOST_PATH)
    if profile.network.host_network:
        wanted.add(Item.HOST_NETWORK)
    conflicts = forbidden(target.level, wanted)
    if not conflicts:
        return set()
    what = ", ".join(conflicts)
    if profile.pod_security_conflict is ConflictAction.DENY:
        raise Denied(
            f'namespace "{target.namespace}" enforces Pod Security level "{target.level}", which '
            f'forbids what RDMA profile "{name}" adds: {what}. Label the namespace '
            f"pod-security.kubernetes.io/enforce=privileged, or ask the admin for a profile "
            f"without them (ipcLock: false, devices: plugin, hostNetwork: false) or with "
            f"podSecurityConflict: skip"
        )
    for item in conflicts:
        warnings.append(
            f"kube-rdma: left out {item}: Pod Security level {target.level} of namespace "
            f"{target.namespace} forbids it" + _skip_consequence(item)
        )
    return set(conflicts)


def _skip_consequence(item: Item) -> str:
    return {
        Item.IPC_LOCK: "; RDMA memory registration fails unless memlock is unlimited",
        Item.HOST_PATH: "; /dev/infiniband must come from the RDMA device plugin",
        Item.HOST_NETWORK: "; RoCE must reach the pod through a Multus network instead",
    }[item]


def _is_rdma(resource: str, profile: Profile) -> bool:
    if resource in profile.resources.names():
        return True
    return any(fnmatch.fnmatchcase(resource, p) for p in profile.resources.rdma_resources)


def _add_resources(container: Json, profile: Profile, warnings: list[str]) -> None:
    if any(_is_rdma(r, profile) for r in _requested(container)):
        return
    wanted = dict(profile.resources.fixed or {})
    rails = profile.resources.per_rail
    if rails is not None:
        gpus = gpu_count(container, profile)
        if gpus > len(rails):
            warnings.append(
                f"kube-rdma: container {container.get('name')} requests {gpus} GPUs but the "
                f"profile has {len(rails)} rails; it gets all {len(rails)}"
            )
        if gpus == 0:
            warnings.append(
                f"kube-rdma: container {container.get('name')} requests no GPU, so it gets no "
                "per-rail RDMA resource"
            )
        wanted = {name: 1 for name in rails[:gpus]}
    if not wanted:
        return
    resources = container.setdefault("resources", {})
    for kind in ("requests", "limits"):
        bucket = resources.get(kind) or {}
        resources[kind] = bucket
        for name, count in wanted.items():
            bucket[name] = str(count)


def _add_mount(container: Json, volume: str, path: str) -> None:
    mounts = container.setdefault("volumeMounts", [])
    if not any(m.get("mountPath") == path for m in mounts):
        mounts.append({"name": volume, "mountPath": path})


def _add_ipc_lock(container: Json, warnings: list[str]) -> None:
    security = container.get("securityContext") or {}
    if security.get("privileged"):
        return
    caps = security.get("capabilities") or {}
    added = caps.get("add") or []
    if "IPC_LOCK" in added or "CAP_IPC_LOCK" in added:
        return
    if {"IPC_LOCK", "CAP_IPC_LOCK"} & set(caps.get("drop") or []):
        warnings.append(
            f"kube-rdma: container {container.get('name')} drops IPC_LOCK, so it was not added; "
            "RDMA memory registration fails unless memlock is unlimited"
        )
        return
    container["securityContext"] = security
    security["capabilities"] = caps
    caps["add"] = [*added, "IPC_LOCK"]


def _memory_limit(container: Json) -> int | None:
    limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    if limit is None:
        return None
    try:
        return parse_bytes(limit)
    except QuantityError as e:
        raise Denied(f"container {container.get('name')}: memory limit: {e}") from e


def _shm_size(containers: list[Json], profile: Profile, warnings: list[str]) -> int:
    shm = profile.shm
    if shm.size is not None:
        return shm.size
    limits = [m for m in (_memory_limit(c) for c in containers) if m is not None]
    if not limits:
        warnings.append(
            f"kube-rdma: no memory limit set, so /dev/shm gets the fallback size "
            f"{format_bytes(shm.fallback)}; set a memory limit to size it from that"
        )
        return shm.fallback
    size = int(max(limits) * shm.memory_fraction)
    size = max(shm.min, min(shm.max, size))
    return max(_MIB, size // _MIB * _MIB)


def _add_shm_mount(container: Json, spec: Json, warnings: list[str]) -> None:
    mounts = container.get("volumeMounts") or []
    own = next((m for m in mounts if m.get("mountPath") == SHM_PATH), None)
    if own is None:
        _add_mount(container, SHM_VOLUME, SHM_PATH)
        return
    if own.get("name") == SHM_VOLUME:
        return
    volumes: list[Json] = spec.get("volumes") or []
    volume = next((v for v in volumes if v.get("name") == own.get("name")), {})
    empty_dir = volume.get("emptyDir")
    if isinstance(empty_dir, dict) and "sizeLimit" not in empty_dir:
        warnings.append(
            f"kube-rdma: container {container.get('name')} mounts its own /dev/shm volume "
            f"{own.get('name')} without a sizeLimit; kept as it is"
        )


def _ensure_volumes(spec: Json, shm_size: int | None) -> None:
    """Add or refresh kube-rdma's volumes that some container mounts."""
    mounted = {
        m.get("name")
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        for m in c.get("volumeMounts") or []
    }
    ours: dict[str, Json] = {INFINIBAND_VOLUME: {"hostPath": {"path": INFINIBAND_PATH}}}
    if shm_size is not None:
        ours[SHM_VOLUME] = {"emptyDir": {"medium": "Memory", "sizeLimit": format_bytes(shm_size)}}
    volumes = spec.get("volumes") or []
    for name, source in ours.items():
        if name not in mounted:
            continue
        current = next((v for v in volumes if v.get("name") == name), None)
        if current is None:
            volumes.append({"name": name, **source})
        elif {k: v for k, v in current.items() if k != "name"} != source:
            current.clear()
            current.update({"name": name, **source})
    if volumes:
        spec["volumes"] = volumes


def nccl_env(profile: Profile) -> list[Json]:
    """The env entries the profile wants, in a stable order."""
    env: list[Json] = [{"name": "NCCL_IB_DISABLE", "value": "0"}]
    nccl, gid = profile.nccl, profile.gid
    if nccl.socket_ifname:
        env.append({"name": "NCCL_SOCKET_IFNAME", "value": nccl.socket_ifname})
    if nccl.ib_hca:
        # One leading '=' makes NCCL match every listed name exactly: NCCL strips a single
        # '^' or '=' from the front of the whole list (net_ib.cc), so '=' per item would
        # make the later items unmatchable. Without it, mlx5_1 also matches mlx5_10.
        env.append({"name": "NCCL_IB_HCA", "value": "=" + ",".join(nccl.ib_hca)})
    if gid.strategy is GidStrategy.AUTO:
        env.append({"name": "NCCL_IB_ROCE_VERSION_NUM", "value": "2"})
        env.append({"name": "NCCL_IB_ADDR_FAMILY", "value": gid.addr_family})
        if gid.addr_range:
            env.append({"name": "NCCL_IB_ADDR_RANGE", "value": gid.addr_range})
    elif gid.strategy is GidStrategy.FIXED:
        env.append({"name": "NCCL_IB_GID_INDEX", "value": str(gid.index)})
    else:
        env.append(_from_annotation("NCCL_IB_GID_INDEX", keys.GID_INDEX))
        env.append(_from_annotation("NCCL_IB_HCA", keys.HCA))
    env.extend({"name": k, "value": v} for k, v in nccl.extra_env.items())
    return env


def _from_annotation(name: str, annotation: str) -> Json:
    path = f"metadata.annotations['{annotation}']"
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _add_env(container: Json, wanted: Iterable[Json], warnings: list[str]) -> None:
    env = container.get("env") or []
    present = {e.get("name"): e for e in env}
    added = [e for e in wanted if e["name"] not in present]
    kept = [e["name"] for e in wanted if e["name"] in present and present[e["name"]] != e]
    if kept:
        warnings.append(
            f"kube-rdma: container {container.get('name')} keeps its own {', '.join(kept)} "
            "instead of the profile's"
        )
    if not added:
        return
    container["env"] = [*env, *added]
    if container.get("envFrom"):
        warnings.append(
            f"kube-rdma: container {container.get('name')} uses envFrom; the NCCL variables "
            "kube-rdma adds to env take precedence there, set them in env to choose your own"
        )


def _set_network(
    pod: Json, profile: Profile, gpus: int, namespace: str, skipped: set[Item]
) -> None:
    network, spec = profile.network, pod["spec"]
    if network.host_network and Item.HOST_NETWORK not in skipped and not spec.get("hostNetwork"):
        spec["hostNetwork"] = True
        if spec.get("dnsPolicy", "ClusterFirst") == "ClusterFirst":
            spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if not network.networks:
        return
    wanted = list(network.networks)
    if network.per_gpu:
        wanted = wanted[: max(gpus, 1)]
    annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
    try:
        merged = multus.merge(annotations.get(multus.NETWORKS_ANNOTATION), wanted, namespace)
    except multus.NetworksError as e:
        raise Denied(f"{e}; fix the annotation so kube-rdma can add the rail networks") from e
    if merged is not None:
        annotations[multus.NETWORKS_ANNOTATION] = merged


def _set_scheduler(spec: Json, profile: Profile, warnings: list[str]) -> None:
    wanted = profile.scheduler_name
    current = spec.get("schedulerName")
    if wanted is None or current == wanted:
        return
    if current in (None, "default-scheduler"):
        spec["schedulerName"] = wanted
        return
    warnings.append(
        f"kube-rdma: pod uses scheduler {current}, not {wanted}; RDMA-aware placement is skipped"
    )
