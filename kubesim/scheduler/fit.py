"""The in-tree filters and score: whether a pod fits a node, why not, and how well.

Where it simplifies kube-scheduler's default profile, and a careful reader could tell:
- the filters are NodeResourcesFit (every requested resource, and the pod count when the node
  lists `pods`), NodeUnschedulable and TaintToleration; a Node whose Ready condition is not True
  is treated as tainted `node.kubernetes.io/not-ready:NoSchedule` (the node lifecycle controller
  does that); a Node without a Ready condition counts as ready;
- the score is LeastAllocated over GPUs alone (0-100, weight 1), where the default profile scores
  cpu and memory with several plugins: only how it compares to the extender's 0-500 matters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from kube_rdma.core.objects import Json
from kubesim.scheduler.pods import GPU, PodKey, amounts

MAX_NODE_SCORE = 100
FIT_WEIGHT = 1
"""NodeResourcesFit's weight in the default profile."""
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


@dataclass(frozen=True)
class NodeFacts:
    """A Node as the in-tree filters see it."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    taints: tuple[Json, ...]
    """The NoSchedule/NoExecute taints, with the ones spec.unschedulable and readiness imply."""


def node_facts(node: Json) -> NodeFacts:
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    status = node.get("status") or {}
    taints = [t for t in spec.get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")]
    if spec.get("unschedulable"):
        taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if ready and ready[0].get("status") != "True":
        taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
    return NodeFacts(
        name=str(meta.get("name")),
        labels=dict(meta.get("labels") or {}),
        allocatable=amounts(status.get("allocatable")),
        taints=tuple(taints),
    )


def tolerates(toleration: Json, taint: Json) -> bool:
    """ToleratesTaint (k8s.io/api/core/v1 toleration.go)."""
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    if (effect and effect != taint.get("effect")) or (key and key != taint.get("key")):
        return False
    if toleration.get("operator") == "Exists":
        return True
    return bool((toleration.get("value") or "") == (taint.get("value") or ""))


def fit_failure(
    node: NodeFacts, used: Mapping[str, int], requests: Mapping[str, int], tolerations: list[Json]
) -> str | None:
    """Why the pod cannot go to the node (the reasons kube-scheduler prints), None if it can."""
    for taint in node.taints:
        if not any(tolerates(t, taint) for t in tolerations):
            if taint.get("key") == UNSCHEDULABLE_TAINT:
                return "node(s) were unschedulable"
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    pods = node.allocatable.get("pods")
    if pods is not None and used.get("pods", 0) + 1 > pods:
        return "Too many pods"
    for name, amount in sorted(requests.items()):
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
        self.changes[node] = self.changes.get(node, 0) + 1
        used = self._used.setdefault(node, {})
        for name, amount in requests.items():
            used[name] = used.get(name, 0) + sign * amount
