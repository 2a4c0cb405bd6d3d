"""What to generate (`ClusterSpec`, checked on construction) and the names the cluster uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kube_rdma.core import keys

LEAF_LABEL = keys.LEAF
SPINE_LABEL = keys.SPINE
ZONE_LABEL = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"
RDMA_SHARED = "rdma/hca"
MULTUS_NETWORKS = "k8s.v1.cni.cncf.io/networks"

# The rail IPv4 plan gives each rail a 10.r.0.0/16 with 250 hosts per /24; pod CIDRs are the
# /24s of 10.128.0.0/9. Both run out past 32,768 nodes.
MAX_NODES = 32_768
MAX_WIDE_NODES = 131_072
"""With `wide_addresses`: each rail a /14 of 10.0.0.0/8 (4 x 256 /24s of 250 hosts) and each
node a /26 of pod addresses in 10.128.0.0/9."""
MAX_DAEMON_PODS = 8
"""DaemonSets a node can run (testbed/clustergen/services.py)."""


@dataclass(frozen=True)
class ClusterSpec:
    """What to generate. Fractions pick exactly round(fraction x nodes) nodes."""

    nodes: int = 64
    seed: int = 0
    nodes_per_leaf: int = 32
    """Leaf switch domain size."""
    leaves_per_spine: int = 8
    """Spine (block) domain size, in leaves."""
    link_layer: Literal["Ethernet", "InfiniBand", "mixed"] = "Ethernet"
    """`mixed`: about a quarter of the spines are InfiniBand, the rest Ethernet."""
    rail_down_fraction: float = 0.02
    """Nodes with exactly one rail DOWN."""
    flaky_fraction: float = 0.01
    """Nodes with one ACTIVE port marked unhealthy (its error counters grow)."""
    no_agent_fraction: float = 0.005
    """Nodes without the topology annotation (the agent never ran there)."""
    busy_fraction: float = 0.5
    """Fraction of all GPUs taken by running pods."""
    per_rail_resources: bool = False
    """rdma/hca1..8 (1 each) instead of rdma/hca: 8."""
    daemon_pods_per_node: int = 0
    """CPU pods of DaemonSets on every node (kube-proxy, Multus, device plugins, exporters)."""
    cpu_pods: int = 0
    """Small CPU pods of Deployments (services, data loaders), Running on random nodes."""
    served: bool = False
    """Objects in full, as a list or watch delivers them: managedFields, the defaults the
    apiserver fills in, container statuses, node images. Off, they carry only what the tests
    read, and generate faster."""
    wide_addresses: bool = False
    """The address plan for up to MAX_WIDE_NODES nodes (benches at 100,000 nodes): rail IPv4s
    in a /14 per rail, a /26 of pod addresses per node. Off, the plan of the clusters before
    (a /16 per rail, a /24 per node), byte for byte, for up to MAX_NODES nodes."""

    def __post_init__(self) -> None:
        problems = _spec_problems(self)
        if problems:
            raise ValueError("invalid ClusterSpec: " + "; ".join(problems))


def spine_count(spec: ClusterSpec) -> int:
    """How many spines the spec's nodes fill, the last leaf and spine possibly part-full."""
    leaves = -(-spec.nodes // spec.nodes_per_leaf)
    return -(-leaves // spec.leaves_per_spine)


def _spec_problems(spec: ClusterSpec) -> list[str]:
    problems = []
    most = MAX_WIDE_NODES if spec.wide_addresses else MAX_NODES
    if not 1 <= spec.nodes <= most:
        problems.append(f"nodes must be 1 to {most}, got {spec.nodes}")
    for name in ("nodes_per_leaf", "leaves_per_spine"):
        if getattr(spec, name) < 1:
            problems.append(f"{name} must be at least 1, got {getattr(spec, name)}")
    fractions = ("rail_down_fraction", "flaky_fraction", "no_agent_fraction", "busy_fraction")
    for name in fractions:
        if not 0.0 <= getattr(spec, name) <= 1.0:
            problems.append(f"{name} must be between 0 and 1, got {getattr(spec, name)}")
    if not 0 <= spec.daemon_pods_per_node <= MAX_DAEMON_PODS:
        problems.append(
            f"daemon_pods_per_node must be 0 to {MAX_DAEMON_PODS}, got {spec.daemon_pods_per_node}"
        )
    if spec.cpu_pods < 0:
        problems.append(f"cpu_pods must be at least 0, got {spec.cpu_pods}")
    if spec.rail_down_fraction + spec.flaky_fraction + spec.no_agent_fraction > 1.0:
        problems.append("rail_down, flaky and no_agent fractions pick distinct nodes: sum <= 1")
    if spec.link_layer not in ("Ethernet", "InfiniBand", "mixed"):
        problems.append(f"link_layer must be Ethernet, InfiniBand or mixed, got {spec.link_layer}")
    elif spec.link_layer == "mixed" and not problems and spine_count(spec) < 2:
        problems.append(
            f"link_layer mixed varies per spine, and {spec.nodes} nodes fill one spine of "
            f"{spec.nodes_per_leaf * spec.leaves_per_spine}: add nodes or lower leaves_per_spine"
        )
    return problems
