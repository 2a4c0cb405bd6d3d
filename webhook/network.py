"""The pod's network: which namespace NCCL runs in, and the Multus rails it gets.

A pod in the host's network namespace (its own `hostNetwork: true` or the profile's) sees the
host's interfaces and GID table and is never wired by Multus: it gets no rails, the socket
interface the profile names for host-network pods, and no per-pod GID resolution (strategy
`pod` falls back to `auto`, which is right on the host's GID table with NCCL 2.21.5 or newer).
Every other pod keeps the Multus networks it already lists; the profile's rails are added when
the pod lists none of its own, or when the profile says `existing: merge`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kube_rdma.core.objects import Json
from webhook import multus
from webhook.denied import Denied
from webhook.podsecurity import Item
from webhook.podspec import mapping
from webhook.profiles import ExistingNetworks, GidStrategy, Profile


@dataclass(frozen=True)
class Plan:
    """What the pod's network means for the settings NCCL gets."""

    host_network: bool
    strategy: GidStrategy
    """The GID strategy in effect for this pod."""
    socket_ifname: str | None
    """NCCL_SOCKET_IFNAME to write, if any."""

    @property
    def resolves(self) -> bool:
        """The pod gets the init container that resolves its settings."""
        return self.strategy is GidStrategy.POD


def plan(spec: Json, profile: Profile, skipped: set[Item]) -> Plan:
    network = profile.network
    host = bool(spec.get("hostNetwork")) or (
        network.host_network and Item.HOST_NETWORK not in skipped
    )
    strategy = profile.gid.strategy
    if host:
        strategy = GidStrategy.AUTO if strategy is GidStrategy.POD else strategy
        return Plan(True, strategy, network.host_socket_ifname)
    if strategy is GidStrategy.POD:
        return Plan(False, strategy, None)
    return Plan(False, strategy, profile.nccl.socket_ifname)


def host_network_warnings(plan: Plan, profile: Profile, selected: list[Json]) -> list[str]:
    """What a host-network pod does not get, and why."""
    if not plan.host_network:
        return []
    warnings = []
    if profile.gid.strategy is GidStrategy.POD:
        warnings.append(
            "kube-rdma: the pod runs in the host's network namespace and sees the host's GID "
            "table, so gid.strategy pod falls back to auto (NCCL 2.21.5 or newer picks the RoCE "
            "GID itself)"
        )
    if profile.network.networks and not profile.network.host_network:
        warnings.append(
            "kube-rdma: the pod runs in the host's network namespace, which Multus does not "
            "wire, so the profile's networks were not added"
        )
    own = all(_sets(c, "NCCL_SOCKET_IFNAME") for c in selected)
    if plan.socket_ifname is None and not own:
        warnings.append(
            "kube-rdma: the pod runs in the host's network namespace and the profile sets no "
            "network.hostSocketIfname, so NCCL_SOCKET_IFNAME is not set and NCCL picks a host "
            "interface itself"
        )
    return warnings


def _sets(container: Json, name: str) -> bool:
    return any(e.get("name") == name for e in container.get("env") or [])


def set_network(
    pod: Json, profile: Profile, plan: Plan, gpus: int, namespace: str, warnings: list[str]
) -> None:
    network, spec = profile.network, pod["spec"]
    if plan.host_network:
        if network.host_network and not spec.get("hostNetwork"):
            spec["hostNetwork"] = True
            # Without this a hostNetwork pod resolves names with the node's resolver and
            # cannot reach cluster Services (its job's headless Service included).
            if spec.get("dnsPolicy", "ClusterFirst") == "ClusterFirst":
                spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        return
    if network.networks:
        _add_rails(pod, profile, gpus, namespace, warnings)


def _add_rails(pod: Json, profile: Profile, gpus: int, namespace: str, warnings: list[str]) -> None:
    network = profile.network
    wanted = list(network.networks[: max(gpus, 1)] if network.per_gpu else network.networks)
    annotations = mapping(mapping(pod, "metadata"), "annotations")
    current = annotations.get(multus.NETWORKS_ANNOTATION)
    try:
        listed = multus.listed(current or "", namespace)
        merged = multus.merge(current, wanted, namespace)
    except multus.NetworksError as e:
        raise Denied(f"{e}; fix the annotation so kube-rdma can add the rail networks") from e
    if (
        listed
        and network.existing is ExistingNetworks.KEEP
        and _foreign(listed, profile, namespace)
    ):
        warnings.append(
            f"kube-rdma: the pod already lists Multus networks "
            f"({', '.join(f'{r.namespace}/{r.name}' for r in listed)}); kept them and added "
            "none of the profile's networks (network.existing: keep)"
        )
        return
    if merged is not None:
        annotations[multus.NETWORKS_ANNOTATION] = merged


def _foreign(listed: list[multus.Ref], profile: Profile, namespace: str) -> bool:
    """The pod lists a network that is not one of the profile's rails."""
    ours = {multus.parse_ref(n, namespace).key for n in profile.network.networks}
    return any(r.key not in ours for r in listed)
