"""Settings in an opted-in pod that make NCCL fall back to TCP or use the wrong device.

Each lint reads one selected container (after the mutation, for IPC_LOCK) and returns warnings;
none of them denies the pod. The environment lints return the variable each warning is about,
so the generic "keeps its own value" warning is not repeated for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube_rdma.core.objects import Json
from webhook.devices import IPC_LOCK_NAMES
from webhook.ncclconf import RESOLVED_ENV, RESOLVER
from webhook.network import Plan
from webhook.profiles import NetworkMode, Profile

_OWN_GIDS = (NetworkMode.MACVLAN, NetworkMode.SRIOV)


def env_lints(container: Json, profile: Profile, plan: Plan) -> dict[str, str]:
    """Warnings about the container's own NCCL variables, by variable name."""
    env: dict[str, Json] = {
        str(e.get("name")): e for e in container.get("env") or [] if isinstance(e, dict)
    }
    name = container.get("name")
    found: dict[str, str] = {}
    overriding = [n for n in RESOLVED_ENV if n in env] if plan.resolves else []
    if overriding:
        message = (
            f"kube-rdma: container {name} sets {', '.join(overriding)} in env, which overrides "
            f"what {RESOLVER} resolves in the pod's network namespace; remove it to use the "
            "resolved value"
        )
        found.update(dict.fromkeys(overriding, message))
    gid = env.get("NCCL_IB_GID_INDEX")
    if gid and "NCCL_IB_GID_INDEX" not in found and _own_gids(profile, plan):
        found["NCCL_IB_GID_INDEX"] = (
            f"kube-rdma: container {name} sets {_shown(gid)} under network mode "
            f"{profile.network.mode.value}, where each pod's GIDs sit at different indexes, so "
            "one index is wrong for most pods; remove it and let the profile's gid strategy "
            "choose"
        )
    found.update(_prefix_hca(env, name, found))
    found.update(_socket_fallback(env, name))
    return found


def _own_gids(profile: Profile, plan: Plan) -> bool:
    return profile.network.mode in _OWN_GIDS and not plan.host_network


def _shown(entry: Json) -> str:
    value = entry.get("value")
    return f"{entry.get('name')}={value}" if isinstance(value, str) else str(entry.get("name"))


def _prefix_hca(env: Mapping[str, Json], name: object, found: Mapping[str, str]) -> dict[str, str]:
    value = (env.get("NCCL_IB_HCA") or {}).get("value")
    if not isinstance(value, str) or not value or "NCCL_IB_HCA" in found:
        return {}
    if value.startswith(("=", "^=")):
        return {}
    exact = "^=" + value[1:] if value.startswith("^") else "=" + value
    return {
        "NCCL_IB_HCA": (
            f"kube-rdma: container {name} sets NCCL_IB_HCA={value}, which NCCL matches by name "
            f"prefix (mlx5_1 also matches mlx5_10); write NCCL_IB_HCA={exact} to match exact "
            "names"
        )
    }


def _socket_fallback(env: Mapping[str, Json], name: object) -> dict[str, str]:
    found = {}
    net = (env.get("NCCL_NET") or {}).get("value")
    if isinstance(net, str) and net.lower() == "socket":
        found["NCCL_NET"] = (
            f"kube-rdma: container {name} sets NCCL_NET={net}, so NCCL uses TCP sockets instead "
            "of RDMA; remove it"
        )
    disable = (env.get("NCCL_IB_DISABLE") or {}).get("value")
    if isinstance(disable, str) and disable.strip() not in ("", "0"):
        found["NCCL_IB_DISABLE"] = (
            f"kube-rdma: container {name} sets NCCL_IB_DISABLE={disable}, so NCCL uses TCP "
            "sockets instead of RDMA; remove it"
        )
    return found


def ipc_lock_lint(container: Json, pod_security: Json) -> str | None:
    """IPC_LOCK in a container that runs as non-root: Kubernetes adds a capability to the
    bounding set only, and a non-root process gets none of it without ambient capabilities."""
    security = container.get("securityContext") or {}
    caps = (security.get("capabilities") or {}).get("add") or []
    if security.get("privileged") or not IPC_LOCK_NAMES & set(caps):
        return None
    reason = _non_root(security, pod_security)
    if reason is None:
        return None
    return (
        f"kube-rdma: container {container.get('name')} runs as non-root ({reason}), so "
        "capability IPC_LOCK has no effect without ambient capabilities; RDMA memory "
        "registration then needs an unlimited memlock limit from the container runtime"
    )


def _non_root(container: Json, pod: Json) -> str | None:
    """Why the container runs as non-root, from its own securityContext or else the pod's."""
    user = container.get("runAsUser", pod.get("runAsUser"))
    if isinstance(user, int):
        return f"runAsUser {user}" if user != 0 else None
    if container.get("runAsNonRoot", pod.get("runAsNonRoot")) is True:
        return "runAsNonRoot: true"
    return None
