"""The cluster a simulation starts from: a snapshot file's Nodes, the pods running on them, the
PodGroups and workloads that size gangs, the DRA objects, and the PodDisruptionBudgets that guard
pods. A node's GPUs are its allocatable `nvidia.com/gpu` plus those its ResourceSlices publish;
the GPUs in use, those the running pods request plus those allocated claims hold.

The file is checked as the extender checks its `--cluster-snapshot` (extender/cluster/
snapshot.py: a broken one is refused with the file and the object named). Pods not bound to a
node, or finished, are left out: the simulation schedules only its workload's pods, on the
capacity the running ones leave.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.cluster.snapshot import KINDS, SnapshotSource
from kube_rdma.core.documents import read_documents
from kube_rdma.core.objects import Json
from kube_rdma.core.resources import is_rdma
from kubesim.scheduler import GPU, bound_node, pod_requests
from kubesim.scheduler.pods import amounts
from kubesim.simulate.workload import Shape

WHOLE_NODE_GPUS = 8


@dataclass(frozen=True)
class SimCluster:
    path: Path
    nodes: tuple[Json, ...]
    pods: tuple[Json, ...]
    """Running pods, bound to a node."""
    others: tuple[Json, ...]
    """PodGroups and workload objects."""
    budgets: tuple[Json, ...]
    """PodDisruptionBudgets (policy/v1)."""
    model: SnapshotSource
    """The extender's model of the snapshot as read, for the topology of each node."""

    @property
    def objects(self) -> list[Json]:
        return [*self.nodes, *self.pods, *self.others]

    def gpus(self) -> int:
        return sum(self._node_gpus(n) for n in self.nodes)

    def shape(self) -> Shape:
        used = sum(pod_requests(p).get(GPU, 0) for p in self.pods)
        index = self.model.cluster.dra
        used += sum(d.in_use("gpu") for d in map(index.node, list(index.nodes())) if d)
        whole = sum(self._node_gpus(n) >= WHOLE_NODE_GPUS for n in self.nodes)
        return Shape(self.gpus() - used, whole, self._rdma_resource(), self._link_layers())

    def _link_layers(self) -> tuple[tuple[str, int], ...]:
        """Nodes with RDMA ports of each link layer, from their topology documents."""
        found: Counter[str] = Counter()
        for node in self.nodes:
            view = self.model.cluster.node(str(node["metadata"]["name"]))
            if view is not None and view.topology is not None:
                found.update({p.link_layer for nic in view.topology.nics for p in nic.ports})
        return tuple(sorted(found.items()))

    def _node_gpus(self, node: Json) -> int:
        published = self.model.cluster.dra.node(str(node["metadata"]["name"]))
        extended = amounts(_allocatable(node)).get(GPU, 0)
        return extended + (published.count("gpu") if published is not None else 0)

    def _rdma_resource(self) -> str | None:
        """The RDMA resource most nodes offer (a per-rail name's first rail, hca1, included)."""
        offered = Counter(r for n in self.nodes for r in _allocatable(n) if is_rdma(r))
        return min(offered, key=lambda r: (-offered[r], r)) if offered else None


def load_cluster(path: Path) -> SimCluster:
    """Raises SnapshotError naming the file and the object when the snapshot is unusable."""
    model = SnapshotSource.from_file(path)
    objects = list(_flatten(read_documents(path)))
    kept = [o for o in objects if o.get("kind") in KINDS]
    nodes = tuple(o for o in kept if o["kind"] == "Node")
    pods = tuple(o for o in kept if o["kind"] == "Pod" and bound_node(o))
    others = tuple(o for o in kept if o["kind"] not in ("Node", "Pod"))
    budgets = tuple(o for o in objects if o.get("kind") == "PodDisruptionBudget")
    return SimCluster(path, nodes, pods, others, budgets, model)


def _allocatable(node: Json) -> dict[str, Any]:
    return dict((node.get("status") or {}).get("allocatable") or {})


def _flatten(documents: list[Any]) -> Iterator[Json]:
    """Every object of the documents (checked already by SnapshotSource.from_file)."""
    for document in documents:
        if isinstance(document, list):
            yield from document
        elif isinstance(document, dict) and str(document.get("kind", "")).endswith("List"):
            yield from document.get("items") or []
        elif isinstance(document, dict):
            yield document
