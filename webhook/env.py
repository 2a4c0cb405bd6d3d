"""The NCCL environment a profile asks for, added without overriding what the user set."""

from __future__ import annotations

from collections.abc import Iterable

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from webhook.podspec import sequence
from webhook.profiles import GidStrategy, Profile


def nccl_env(profile: Profile) -> list[Json]:
    """The env entries the profile wants, in a stable order, in the form the apiserver stores
    (so a later pass compares equal)."""
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
    """An env var the kubelet fills from a pod annotation (the downward API) at start."""
    path = f"metadata.annotations['{annotation}']"
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}


def add_env(container: Json, wanted: Iterable[Json], warnings: list[str]) -> None:
    """Append the wanted entries whose names the container does not set yet."""
    present = {e.get("name"): e for e in container.get("env") or []}
    added = [e for e in wanted if e["name"] not in present]
    kept = [e["name"] for e in wanted if e["name"] in present and present[e["name"]] != e]
    if kept:
        warnings.append(
            f"kube-rdma: container {container.get('name')} keeps its own {', '.join(kept)} "
            "instead of the profile's"
        )
    if not added:
        return
    sequence(container, "env").extend(added)
    if container.get("envFrom"):
        warnings.append(
            f"kube-rdma: container {container.get('name')} uses envFrom; the NCCL variables "
            "kube-rdma adds to env take precedence there, set them in env to choose your own"
        )
