"""The in-tree filters and score: whether a pod fits a node, why not, and how well.

Where it simplifies kube-scheduler's default profile, and a careful reader could tell:
- the filters are NodeUnschedulable, TaintToleration and NodeAffinity (kube_rdma.core.
  nodeconstraints, which also implies the taints the node lifecycle controller puts on a node
  that is not Ready), then NodeResourcesFit (every requested resource, and the pod count when
  the node lists `pods`; an extended resource a DeviceClass serves is left to DynamicResources
  on a node whose allocatable has none of it, KEP-5004); the other filters of the default
  profile (ports, volumes, inter-pod affinity, topology spread) are not emulated;
- the score is LeastAllocated over GPUs alone (0-100, weight 1), where the default profile scores
  cpu and memory with several plugins: only how it compares to the extender's 0-500 matters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from kube_rdma.core import nodeconstraints
from kube_rdma.core.nodeconstraints import NodeConstraints
from kube_rdma.core.objects import Json
from kubesim.scheduler.changes import ChangeLog
from kubesim.scheduler.pods import GPU, PodKey, amounts

MAX_NODE_SCORE = 100
FIT_WEIGHT = 1
"""NodeResourcesFit's weight in the default profile."""


@dataclass(frozen=True)
class NodeFacts:
    """A Node as the in-tree filters see it."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    constraints: nodeconstraints.NodeFacts
    """What NodeUnschedulable, TaintToleration and NodeAffinity read."""


def node_facts(node: Json) -> NodeFacts:
    facts = nodeconstraints.node_facts(node)
    return NodeFacts(
        name=facts.name,
        labels=facts.labels,
        allocatable=amounts((node.get("status") or {}).get("allocatable")),
        constraints=facts,
    )


def fit_failure(
    node: NodeFacts,
    used: Mapping[str, int],
    requests: Mapping[str, int],
    constraints: NodeConstraints,
    deferred: AbstractSet[str] = frozenset(),
) -> str | None:
    """Why the pod cannot go to the node (the reasons kube-scheduler prints), None if it can;
    the filters in the default profile's order. `deferred`: the extended resources DRA serves
    (kubesim/scheduler/dynamicresources.py judges them where the node has none of its own)."""
    refusal = constraints.refusal(node.constraints)
    if refusal is not None:
        return refusal
    pods = node.allocatable.get("pods")
    if pods is not None and used.get("pods", 0) + 1 > pods:
        return "Too many pods"
    for name, amount in sorted(requests.items()):
        if name in deferred and not node.allocatable.get(name, 0):
            continue
        if node.allocatable.get(name, 0) - used.get(name, 0) < amount:
            return f"Insufficient {name}"
    return None


def fit_error(num_all_nodes: int, failed: Mapping[str, str]) -> str:
    """FitError's message: `0/N nodes are available: 3 Insufficient nvidia.com/gpu, ...`."""
    counts = Counter(failed.values())
    reasons = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{num_all_nodes} nodes are available: {', '.join(reasons)}."


def gpu_score(node: NodeFacts, used: Mapping[str, int], requests: Mapping[str, int]) -> int:
    """leastRequestedScore on GPUs: the share left free once the pod is placed, 0-100."""
    capacity = node.allocatable.get(GPU, 0)
    requested = used.get(GPU, 0) + requests.get(GPU, 0)
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


class NodeUsage:
    """What the pods bound or assumed on each node request, pod count included."""

    def __init__(self) -> None:
        self._placed: dict[PodKey, tuple[str, dict[str, int]]] = {}
        self._used: dict[str, dict[str, int]] = {}
        self.changes: dict[str, int] = {}
        """Per node, a count that moves whenever its usage does (absent: 0)."""
        self.version = 0
        """Moves whenever any node's usage does."""
        self.touched = ChangeLog()
        """The nodes whose usage moved, in order."""

    def of(self, node: str) -> Mapping[str, int]:
        return self._used.get(node, {})

    def place(self, key: PodKey, node: str | None, requests: Mapping[str, int]) -> None:
        current = self._placed.pop(key, None)
        if current is not None:
            self._add(*current, sign=-1)
        if node is not None:
            placed = (node, {**requests, "pods": 1})
            self._placed[key] = placed
            self._add(*placed, sign=1)

    def _add(self, node: str, requests: Mapping[str, int], sign: int) -> None:
        self.version += 1
        self.changes[node] = self.changes.get(node, 0) + 1
        self.touched.add(node)
        used = self._used.setdefault(node, {})
        for name, amount in requests.items():
            used[name] = used.get(name, 0) + sign * amount
