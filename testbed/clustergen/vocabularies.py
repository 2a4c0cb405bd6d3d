"""Clusters labelled in each vocabulary that describes a fabric, and NVL72-style clusters.

`relabel` moves a generated cluster's kube-rdma labels (leaf, spine, zone, and an NVLink
clique where the nodes carry one) to another vocabulary's labels for the same switches, so
that one cluster can be planned in every vocabulary and the plans compared. The label names
and which end of each hierarchy is narrowest are extender/levels/vocabularies.py's (with its
sources): Topograph v1 numbers tiers from the node outwards, EKS numbers layers from the top
down and names an UltraServer's NVLink domain `topology.k8s.aws/ultraserver-id`, GKE names
block, subblock and host.

`nvl72` builds GB200 NVL72-style nodes: 4 GPUs and 4 rails each, 18 nodes to an NVLink
partition (`nvidia.com/gpu.clique`, `<cluster uuid>.<clique id>` as NVIDIA's GPU feature
discovery writes it), leaves of `nodes_per_leaf` nodes that need not line up with the racks.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from extender.levels import vocabularies as v
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes

VOCABULARIES = ("kube-rdma", "topograph", "topograph-v0", "eks", "gke", "oci")

_MAPS: dict[str, dict[str, str]] = {
    "kube-rdma": {},
    "topograph": {
        keys.LEAF: v.TOPOGRAPH_TIERS[0],
        keys.SPINE: v.TOPOGRAPH_TIERS[1],
        v.ZONE: v.TOPOGRAPH_TIERS[2],
        v.CLIQUE: v.TOPOGRAPH_DOMAIN,
    },
    "topograph-v0": {
        keys.LEAF: v.TOPOGRAPH_V0 + "leaf",
        keys.SPINE: v.TOPOGRAPH_V0 + "spine",
        v.ZONE: v.TOPOGRAPH_V0 + "core",
        v.CLIQUE: v.TOPOGRAPH_V0 + "accelerator",
    },
    "eks": {
        keys.LEAF: "topology.k8s.aws/network-node-layer-3",
        keys.SPINE: "topology.k8s.aws/network-node-layer-2",
        v.ZONE: "topology.k8s.aws/network-node-layer-1",
        v.CLIQUE: v.EKS_ULTRASERVER,
    },
    "gke": {keys.LEAF: v.GKE_LEVELS[1], keys.SPINE: v.GKE_LEVELS[2]},
    "oci": {keys.LEAF: v.OCI_LEVELS[0], keys.SPINE: v.OCI_LEVELS[1], v.ZONE: v.OCI_LEVELS[2]},
}
"""kube-rdma's label -> the vocabulary's label for the same switch (or NVLink domain)."""

CLIQUE_NODES = 18
NVL72_GPUS = 4
CLUSTER_UUID = "8f3b2c10-6a1e-4c1d-9a55-2f0e7d6b4c21"


def relabel(objects: list[Json], vocabulary: str) -> list[Json]:
    """The objects with every Node's network labels in `vocabulary`; other objects as given."""
    if vocabulary not in _MAPS:
        raise ValueError(f"unknown vocabulary {vocabulary!r}: one of {', '.join(VOCABULARIES)}")
    return [_relabelled(o, _MAPS[vocabulary], vocabulary) for o in objects]


def _relabelled(obj: Json, mapping: Mapping[str, str], vocabulary: str) -> Json:
    if obj.get("kind") != "Node" or not mapping:
        return obj
    result = copy.deepcopy(obj)
    labels: dict[str, str] = result["metadata"].setdefault("labels", {})
    for ours, theirs in mapping.items():
        if ours in labels:
            labels[theirs] = labels.pop(ours)
    if vocabulary == "gke":
        # GKE's narrowest level, one physical host: one node each here.
        labels[v.GKE_LEVELS[0]] = f"host-{result['metadata']['name']}"
    return result


def nvl72(cliques: int, nodes_per_leaf: int = 16, leaves_per_spine: int = 8) -> list[Json]:
    """Nodes `gb-<clique>-<slot>`, kube-rdma vocabulary (relabel for another)."""
    made = []
    for index in range(cliques * CLIQUE_NODES):
        clique, slot = divmod(index, CLIQUE_NODES)
        leaf = index // nodes_per_leaf
        labels = {
            "kubernetes.io/hostname": f"gb-{clique}-{slot:02d}",
            "nvidia.com/gpu.product": "NVIDIA-GB200",
            v.CLIQUE: f"{CLUSTER_UUID}.{clique}",
            keys.LEAF: f"leaf-{leaf:03d}",
            keys.SPINE: f"spine-{leaf // leaves_per_spine:02d}",
            v.ZONE: "zone-0",
        }
        topology = nodes.hgx(gpus=NVL72_GPUS)
        rdma = {"rdma/hca": NVL72_GPUS}
        made.append(
            nodes.node(labels["kubernetes.io/hostname"], topology, NVL72_GPUS, rdma, labels)
        )
    return made
