"""Realistic GPU clusters as Kubernetes Node and Pod objects, generated from a seed.

The extender's benchmark, its tests, the demo and the gang simulator all need a cluster that
looks like a real one: HGX nodes with eight GPUs and eight 400G rails (a few 4-GPU boards so
bin-packing matters), the topology document the agent would publish (a rail down here, a NIC
counting errors there, a node whose agent never ran), leaf/spine/zone domain labels, and training
pods already running on half the GPUs. `generate` returns the objects as plain dicts in the form
the apiserver returns them; `write_snapshot` stores them as a `kind: List` file, the format the
extender's `--cluster-snapshot` reads.

Everything is drawn from `random.Random` streams seeded by `ClusterSpec.seed`, one stream per
concern (node hardware, pods), so the same spec always gives byte-identical output and changing
the pod load does not change the nodes. Nodes are numbered in rack order: node i sits in leaf
i // nodes_per_leaf. Each node's document is built and encoded on its own, since its GIDs carry
per-node addresses (rail r's IPv4 is 10.r.x.y) as on a real cluster; at about 0.2 ms a node that
is cheaper than templating (5,000 nodes with their pods take about 1 s).
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

from kube_rdma.core.objects import Json
from testbed.clustergen.hardware import boards
from testbed.clustergen.nodes import node
from testbed.clustergen.pods import Pods
from testbed.clustergen.served import served_node, served_pod
from testbed.clustergen.services import CpuPods
from testbed.clustergen.spec import (
    GPU,
    LEAF_LABEL,
    MAX_NODES,
    MULTUS_NETWORKS,
    RDMA_SHARED,
    SPINE_LABEL,
    ZONE_LABEL,
    ClusterSpec,
)

__all__ = [
    "GPU",
    "LEAF_LABEL",
    "MAX_NODES",
    "MULTUS_NETWORKS",
    "RDMA_SHARED",
    "SPINE_LABEL",
    "ZONE_LABEL",
    "ClusterSpec",
    "generate",
    "write_snapshot",
]


def generate(spec: ClusterSpec) -> list[Json]:
    """The cluster's Nodes, then its Pods (training pods running, succeeded and pending, then
    the CPU pods of DaemonSets and Deployments), in full when `spec.served`."""
    hardware = boards(spec, random.Random(f"{spec.seed}:boards"))
    nodes_rng = random.Random(f"{spec.seed}:nodes")
    nodes = [node(spec, board, nodes_rng) for board in hardware]
    pods = Pods(spec, hardware, random.Random(f"{spec.seed}:pods")).all()
    pods += CpuPods(spec, hardware, random.Random(f"{spec.seed}:services")).all()
    if spec.served:
        served_rng = random.Random(f"{spec.seed}:served")
        nodes = [served_node(n) for n in nodes]
        pods = [served_pod(p, served_rng) for p in pods]
    return [*nodes, *pods]


def write_snapshot(objects: list[Json], path: Path) -> None:
    """A `kind: List` JSON file, as `kubectl get nodes,pods -o json` writes it."""
    document = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}}
    path.write_bytes(orjson.dumps({**document, "items": objects}))
