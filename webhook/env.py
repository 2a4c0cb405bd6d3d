"""The NCCL environment a profile asks for, added without overriding what the user set."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from webhook.ncclconf import conf_env
from webhook.network import Plan
from webhook.podspec import sequence
from webhook.profiles import Gid, GidStrategy, Nccl, Profile


def nccl_env(profile: Profile, plan: Plan) -> list[Json]:
    """The env entries the profile wants for this pod, in a stable order, in the form the
    apiserver stores (so a later pass compares equal). Under strategy `pod` the settings the
    resolver writes stay out of env, where they would win over its file."""
    env: list[Json] = [{"name": "NCCL_IB_DISABLE", "value": "0"}]
    nccl, gid = profile.nccl, profile.gid
    if nccl.require_ib:
        env.append({"name": "NCCL_NET", "value": "IB"})
    if plan.socket_ifname:
        env.append({"name": "NCCL_SOCKET_IFNAME", "value": plan.socket_ifname})
    env.extend(_hca_env(nccl))
    env.extend(_gid_env(gid, plan.strategy))
    env.extend({"name": k, "value": v} for k, v in nccl.extra_env.items())
    return env


def debug_env(metadata: Json) -> list[Json]:
    """NCCL's transport lines, which `kube-rdma diagnose` reads, for a pod that asks for them."""
    if (metadata.get("annotations") or {}).get(keys.DEBUG) != "true":
        return []
    return [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "NCCL_DEBUG_SUBSYS", "value": "INIT,NET"},
    ]


def _hca_env(nccl: Nccl) -> list[Json]:
    # One leading '=' (or '^=') makes NCCL match every listed name exactly: NCCL strips a
    # single '^' and then a single '=' from the front of the whole list (net_ib.cc), so '=' per
    # item would make the later items unmatchable. Without it, mlx5_1 also matches mlx5_10.
    if nccl.ib_hca:
        return [{"name": "NCCL_IB_HCA", "value": "=" + ",".join(nccl.ib_hca)}]
    if nccl.ib_hca_exclude:
        return [{"name": "NCCL_IB_HCA", "value": "^=" + ",".join(nccl.ib_hca_exclude)}]
    return []


def _gid_env(gid: Gid, strategy: GidStrategy) -> list[Json]:
    if strategy is GidStrategy.AUTO:
        env = [
            {"name": "NCCL_IB_ROCE_VERSION_NUM", "value": str(gid.roce_version)},
            {"name": "NCCL_IB_ADDR_FAMILY", "value": gid.addr_family},
        ]
        if gid.addr_range:
            env.append({"name": "NCCL_IB_ADDR_RANGE", "value": gid.addr_range})
        return env
    if strategy is GidStrategy.FIXED:
        return [{"name": "NCCL_IB_GID_INDEX", "value": str(gid.index)}]
    if strategy is GidStrategy.NODE:
        return [
            _from_annotation("NCCL_IB_GID_INDEX", keys.GID_INDEX),
            _from_annotation("NCCL_IB_HCA", keys.HCA),
        ]
    return conf_env(gid)


def _from_annotation(name: str, annotation: str) -> Json:
    """An env var the kubelet fills from a pod annotation (the downward API) at start."""
    path = f"metadata.annotations['{annotation}']"
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}


def add_env(
    container: Json, wanted: Sequence[Json], warnings: list[str], explained: Collection[str] = ()
) -> None:
    """Append the wanted entries whose names the container does not set yet; `explained`
    names the variables a warning already covers."""
    present = {e.get("name"): e for e in container.get("env") or []}
    added = [e for e in wanted if e["name"] not in present]
    kept = [
        e["name"]
        for e in wanted
        if e["name"] in present and present[e["name"]] != e and e["name"] not in explained
    ]
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
