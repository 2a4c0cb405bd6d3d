"""The node labels that describe a cluster's fabric, in each vocabulary that writes them.

Each vocabulary names its switch tiers (kept here narrowest first, whatever order its writer
numbers them in) and the labels that name a node's NVLink domain. Sources:

- kube-rdma: `kube-rdma.io/leaf`, `kube-rdma.io/spine`, then `topology.kubernetes.io/zone`.
- Topograph v1.0 and later (docs.nvidia.com/topograph/v1.0.0/reference/node-labels-and-annotations):
  `fabric.topograph.run/tier-N`, tier 0 the switch nearest the node, numbers growing outwards;
  `accelerator.topograph.run/domain`, omitted where `acceleratorDomainSourceLabel` (such as
  `nvidia.com/gpu.clique`) is authoritative, and `/sub-domain` nested inside the domain.
- Topograph v0.3-v0.5 (NVIDIA/topograph docs/engines/k8s.md): `network.topology.nvidia.com/
  leaf`, `/spine`, `/core` (top), and `/accelerator`, left unset where `nvidia.com/gpu.clique`
  exists; v0.1 (same file at v0.1.0) wrote `/block`, `/spine` and `/datacenter` instead.
- EKS (docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html):
  `topology.k8s.aws/network-node-layer-1` is the top of the hierarchy, layer 3 the bottom for
  most instance types, layer 4 the bottom on types with four layers. On P6e-GB200 UltraServer
  nodes, `topology.k8s.aws/ultraserver-id` labels "each of the instances belonging to the same
  NVLink domain in an UltraServer" (AWS SageMaker developer guide, sagemaker-hyperpod-topology,
  "EKS topology label"). The clique, where GPU feature discovery writes it, is read first: the
  fabric manager may split one UltraServer into several NVLink partitions (NVIDIA Topograph's
  users report several cliques within one UltraServer capacity block).
- GKE (cloud.google.com/ai-hypercomputer, "schedule GKE workloads with TAS"):
  `cloud.google.com/gce-topology-block`, `-subblock`, `-host`, widest to narrowest.
- OCI (oracle-quickstart/oci-hpc-oke, "Using RDMA network locality"): `oci.oraclecloud.com/
  rdma.local_block_id` (tier 0), `rdma.network_block_id` (tier 1), `rdma.hpc_island_id` (tier 2).
- NVIDIA GPU feature discovery labels a multi-node NVLink partition `nvidia.com/gpu.clique`
  (`<ClusterUUID>.<CliqueID>`), whichever vocabulary describes the switches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kube_rdma.core import keys

ZONE = "topology.kubernetes.io/zone"
CLIQUE = "nvidia.com/gpu.clique"
NVLINK = "nvlink"
"""The level name of the NVLink domain, whichever label names it on a node."""

TOPOGRAPH_TIERS = tuple(f"fabric.topograph.run/tier-{n}" for n in range(8))
TOPOGRAPH_DOMAIN = "accelerator.topograph.run/domain"
TOPOGRAPH_SUB_DOMAIN = "accelerator.topograph.run/sub-domain"
TOPOGRAPH_V0 = "network.topology.nvidia.com/"
EKS_LAYERS = tuple(f"topology.k8s.aws/network-node-layer-{n}" for n in (4, 3, 2, 1))
EKS_ULTRASERVER = "topology.k8s.aws/ultraserver-id"
GKE_LEVELS = tuple(f"cloud.google.com/gce-topology-{n}" for n in ("host", "subblock", "block"))
OCI_LEVELS = tuple(
    f"oci.oraclecloud.com/rdma.{n}" for n in ("local_block_id", "network_block_id", "hpc_island_id")
)


@dataclass(frozen=True)
class Levels:
    """A cluster's network levels."""

    fabric: tuple[str, ...]
    """Node labels of the switch tiers, narrowest first."""
    nvlink: tuple[str, ...] = (CLIQUE,)
    """Node labels that name a node's NVLink domain; the first one a node carries counts."""
    source: str = "kube-rdma"
    """Where the levels came from: a preset's name, `auto (...)`, a Topology object."""

    def nvlink_domain(self, labels: Mapping[str, str]) -> str | None:
        return next((labels[k] for k in self.nvlink if labels.get(k)), None)

    def in_use(self, label_sets: Iterable[Mapping[str, str]]) -> list[str]:
        """The levels some node carries, narrowest first, `nvlink` first when present."""
        present: set[str] = set()
        for labels in label_sets:
            present.update(k for k in labels if k in self.fabric)
            if NVLINK not in present and self.nvlink_domain(labels) is not None:
                present.add(NVLINK)
        return [level for level in (NVLINK, *self.fabric) if level in present]


PRESETS: dict[str, Levels] = {
    "kube-rdma": Levels((keys.LEAF, keys.SPINE, ZONE), source="kube-rdma"),
    "topograph": Levels(TOPOGRAPH_TIERS, (TOPOGRAPH_DOMAIN, CLIQUE), "topograph"),
    "topograph-v0": Levels(
        tuple(TOPOGRAPH_V0 + n for n in ("leaf", "block", "spine", "core", "datacenter")),
        (TOPOGRAPH_V0 + "accelerator", CLIQUE),
        "topograph-v0",
    ),
    "eks": Levels(EKS_LAYERS, (CLIQUE, EKS_ULTRASERVER), "eks"),
    "gke": Levels(GKE_LEVELS, source="gke"),
    "oci": Levels(OCI_LEVELS, source="oci"),
}
"""The presets of `--topology`; `auto` picks among them."""

AUTO_ORDER = ("topograph", "topograph-v0", "eks", "gke", "oci", "kube-rdma")
_PRESET_OF = {label: name for name in AUTO_ORDER for label in PRESETS[name].fabric if label != ZONE}
"""Each preset's own switch labels (the zone, which clouds set on every node, left out)."""


def auto_levels(label_sets: Iterable[Mapping[str, str]]) -> Levels:
    """The preset whose fabric labels the most nodes carry (the first in AUTO_ORDER on a tie;
    kube-rdma when no node carries any). The zone label is not counted: clouds set it on every
    node whatever else describes their fabric."""
    counts = dict.fromkeys(AUTO_ORDER, 0)
    for labels in label_sets:
        for name in {_PRESET_OF[k] for k in labels if k in _PRESET_OF}:
            counts[name] += 1
    best = max(AUTO_ORDER, key=lambda name: (counts[name], -AUTO_ORDER.index(name)))
    chosen = PRESETS[best] if counts[best] else PRESETS["kube-rdma"]
    return Levels(chosen.fabric, chosen.nvlink, f"auto ({chosen.source})")


def custom_levels(labels: Iterable[str]) -> Levels:
    """Levels from `--domain-label`, narrowest first."""
    return Levels(tuple(labels), source="--domain-label")
