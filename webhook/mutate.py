"""The pure core of the webhook: a pod and a profile in, the RDMA-ready pod out.

`mutate` works on a copy and does no I/O; the JSON patch is computed afterwards from the
request object and the result. Every step is idempotent: it adds only what is missing (volumes
and init containers by name, mounts by mountPath, env vars and capabilities by name, networks by
namespace/name), and writes each value in the form the apiserver stores after defaulting, so
the webhook applied to its own stored output, or re-invoked after other webhooks, changes
nothing. A value the user set is never overridden; every item left out or defaulted, and every
setting of the user's that would make NCCL fall back to TCP, is explained in a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import QuantityError
from webhook import lints, ncclconf
from webhook.denied import Denied, echo_list
from webhook.devices import add_ipc_lock, add_resources, mount_infiniband
from webhook.dra.attach import Attach, attach
from webhook.dra.kinds import NO_CLAIMS, PodClaims
from webhook.env import add_env, debug_env, nccl_env
from webhook.network import Plan, host_network_warnings, plan, set_network
from webhook.placement import set_placement
from webhook.podsecurity import Item, Level, forbidden
from webhook.podspec import gpu_count, mapping
from webhook.profiles import ConflictAction, DeviceMode, Profile
from webhook.shm import mount_shm, shm_size
from webhook.volumes import ensure_volumes

__all__ = ["Denied", "Mutation", "Target", "applied_record", "mutate", "select_containers"]


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
    claims: PodClaims = NO_CLAIMS
    """What the pod's DRA claims give its containers (the attached template's included)."""
    attach: Attach | None = None
    """The profile's claim template to attach to the pod."""


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
    if target.attach is not None:
        attach(spec, target.attach, profile, out.warnings)
    claims = target.claims
    selected = select_containers(spec, metadata, profile, claims)
    if not selected:
        out.warnings.append(
            f"kube-rdma: no container requests {'/'.join(profile.gpu_resources)} or gets GPUs "
            f"from a claim, so nothing was added; name the containers in the {keys.CONTAINERS} "
            "annotation"
        )
        return
    host_path = any(not claims.nics(c) for c in selected)
    skipped = _pod_security(name, profile, target, host_path, out.warnings)
    pod_plan = plan(spec, profile, skipped)
    out.warnings += host_network_warnings(pod_plan, profile, selected)
    size = shm_size(selected, profile.shm, out.warnings) if profile.shm.enabled else None
    for container in selected:
        _prepare(
            container, spec, profile, pod_plan, skipped, size is not None, out.warnings, claims
        )
        add_env(container, debug_env(metadata), out.warnings)
    ensure_volumes(spec, size)
    if pod_plan.resolves:
        settings = ncclconf.file_settings(nccl_env(profile, pod_plan))
        nics = claims.nic_references(selected)
        ncclconf.add_resolver(spec, profile.gid, selected, settings, nics)
    out.warnings += filter(None, [ncclconf.mpi_warning(metadata, profile.gid, pod_plan.resolves)])
    gpus = max(_gpus(c, profile, claims) for c in selected)
    if any(claims.nics(c) for c in selected):
        out.warnings += _claimed_nics_warnings(profile, pod_plan)
    else:
        set_network(out.pod, profile, pod_plan, gpus, target.namespace, out.warnings)
    _set_scheduler(spec, profile, out.warnings)
    set_placement(out.pod, profile.scheduling, out.warnings)
    mapping(metadata, "annotations")[keys.APPLIED] = applied_record(name, profile)


def _prepare(
    container: Json,
    spec: Json,
    profile: Profile,
    pod_plan: Plan,
    skipped: set[Item],
    shm: bool,
    warnings: list[str],
    claims: PodClaims,
) -> None:
    """Make one selected container RDMA-ready. One whose RDMA NICs come from a claim keeps
    them: the DRA driver injects the devices, so no RDMA resource and no hostPath."""
    claimed = claims.nics(container)
    if not claimed:
        add_resources(container, profile, _gpus(container, profile, claims), warnings)
    if profile.devices is DeviceMode.HOST_PATH and Item.HOST_PATH not in skipped and not claimed:
        mount_infiniband(container, warnings)
    if profile.ipc_lock and Item.IPC_LOCK not in skipped:
        add_ipc_lock(container, warnings)
    if shm:
        mount_shm(container, spec, warnings)
    if pod_plan.resolves:
        ncclconf.mount_conf(container, profile.gid, warnings)
    found = lints.env_lints(container, profile, pod_plan)
    warnings.extend(dict.fromkeys(found.values()))
    add_env(container, nccl_env(profile, pod_plan), warnings, explained=found)
    warnings.extend(
        filter(None, [lints.ipc_lock_lint(container, spec.get("securityContext") or {})])
    )


def applied_record(name: str, profile: Profile) -> str:
    """The `kube-rdma.io/applied` value: which profile, which version of it (its hash), and
    the network mode, which tells the extender the link layer the pod needs."""
    record = {"profile": name, "hash": profile.digest, "network": profile.network.mode.value}
    return orjson.dumps(record).decode()


def _gpus(container: Json, profile: Profile, claims: PodClaims) -> int:
    """The container's GPUs: device-plugin resources and those its claims give."""
    return gpu_count(container, profile.gpu_resources) + claims.gpu_count(container)


def _claimed_nics_warnings(profile: Profile, pod_plan: Plan) -> list[str]:
    """A pod whose NICs come from a claim is not wired by the profile: the DRA driver moves the
    NIC's netdev into the pod's own network namespace (dranet) or attaches the VF itself."""
    if pod_plan.host_network or not profile.network.networks:
        return []
    return [
        "kube-rdma: the pod's RDMA NICs come from a DRA claim, whose driver puts them in the "
        "pod's network namespace, so the profile's Multus networks were not added"
    ]


def select_containers(
    spec: Json, metadata: Json, profile: Profile, claims: PodClaims = NO_CLAIMS
) -> list[Json]:
    """The containers to make RDMA-ready: those named by annotation (init containers too),
    else the regular containers that request a GPU or get GPUs from a claim."""
    regular = spec.get("containers") or []
    named = (metadata.get("annotations") or {}).get(keys.CONTAINERS)
    if named is None:
        return [c for c in regular if _gpus(c, profile, claims) > 0]
    wanted = [n.strip() for n in named.split(",") if n.strip()]
    by_name = {c.get("name"): c for c in [*regular, *(spec.get("initContainers") or [])]}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise Denied(
            f"{keys.CONTAINERS} names {echo_list(unknown)}, which the pod does not have; "
            f"its containers are {echo_list([str(n) for n in by_name])}"
        )
    return [by_name[n] for n in dict.fromkeys(wanted)]


def _pod_security(
    name: str, profile: Profile, target: Target, host_path: bool, warnings: list[str]
) -> set[Item]:
    """The items to leave out because the namespace's level forbids them; raises Denied
    instead when the profile says to deny. `host_path`: a selected container would get the
    hostPath (its NICs do not all come from claims)."""
    wanted = {
        item
        for item, on in (
            (Item.IPC_LOCK, profile.ipc_lock),
            (Item.HOST_PATH, profile.devices is DeviceMode.HOST_PATH and host_path),
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
