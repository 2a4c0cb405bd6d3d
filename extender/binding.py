"""What a bind writes on a pod whose profile takes NCCL settings from the node (`node` GID
strategy): the GID index and the exact HCA list that are right for the chosen node.

The webhook injected NCCL_IB_GID_INDEX and NCCL_IB_HCA through the downward API from the pod
annotations `kube-rdma.io/gid-index` and `kube-rdma.io/hca`; the kubelet resolves them when the
containers start, after the bind, so writing them just before binding makes them node-correct.
"""

from __future__ import annotations

from extender.cluster.model import NodeInfo
from extender.cluster.source import BindError
from extender.pairing import Rails, chosen_nics
from extender.podview import PodView
from kube_rdma.core import keys
from kube_rdma.core.topology import Nic


def node_settings(pod: PodView, node: NodeInfo, rails: Rails | None) -> dict[str, str]:
    """The annotations for `pod` on `node`; raises BindError when the node cannot supply them."""
    if node.topology is None or rails is None or not rails.usable_nics:
        kind = f"{pod.link_layer} " if pod.link_layer else ""
        raise BindError(f"node {node.name} has no usable {kind}RDMA NIC to configure NCCL with")
    nics = chosen_nics(node.topology, rails.usable_nics, max(pod.gpus, pod.rails, 1))
    by_name = {nic.name: nic for nic in node.topology.nics}
    common: set[int] | None = None
    for name in nics:
        indexes = _gid_indexes(by_name[name])
        common = indexes if common is None else common & indexes
    if not common:
        raise BindError(
            f"node {node.name}: no GID index is a RoCE v2 IPv4 GID on every chosen NIC "
            f"({', '.join(nics)}); NCCL_IB_GID_INDEX must be the same for all of them"
        )
    # Exact match ('=' once, for the whole list): mlx5_1 must not also select mlx5_10.
    return {keys.GID_INDEX: str(min(common)), keys.HCA: "=" + ",".join(nics)}


def _gid_indexes(nic: Nic) -> set[int]:
    found = set()
    for port in nic.ports:
        if port.state != "ACTIVE" or not port.healthy:
            continue
        for gid in port.gids:
            if gid.type == "IB" or (gid.type == "RoCE v2" and gid.ip and "." in gid.ip):
                found.add(gid.index)
    return found
