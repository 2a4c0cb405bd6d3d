"""Which nodes a pod may use at all, decided as kube-scheduler's default filters decide it.

kube-scheduler sends an extender only the nodes its own filters let through, but a gang is
planned over the extender's whole cache, and the emulated kube-scheduler must rule nodes out as
the real one does. Both need the same three filters of the default profile, in their order:
- NodeUnschedulable: a cordoned node (spec.unschedulable) refuses a pod unless it tolerates
  `node.kubernetes.io/unschedulable:NoSchedule`;
- TaintToleration: every NoSchedule and NoExecute taint must be tolerated (PreferNoSchedule only
  scores). The node lifecycle controller taints a node whose Ready condition is False
  `node.kubernetes.io/not-ready:NoSchedule`, Unknown `node.kubernetes.io/unreachable:NoSchedule`,
  and one under memory, disk or PID pressure or without network likewise; those taints are
  implied here from the conditions, so a snapshot without them judges as a live cluster does;
- NodeAffinity: spec.nodeSelector and the required node affinity (kube_rdma.core.nodeselector).

A pod's constraints are compiled once (`NodeConstraints.of`) and then judged against thousands of
nodes: a pod with no selector, affinity or toleration costs one attribute test per untainted node.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from kube_rdma.core.nodeselector import NodeTest, node_affinity
from kube_rdma.core.objects import Json

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
REFUSING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""The effects TaintToleration filters on; PreferNoSchedule only lowers a score."""

UNSCHEDULABLE_REASON = "node(s) were unschedulable"
"""pkg/scheduler/framework/plugins/nodeunschedulable, ErrReasonUnschedulable."""
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
"""pkg/scheduler/framework/plugins/nodeaffinity, ErrReasonPod."""

# pkg/controller/nodelifecycle, nodeConditionToTaintKeyStatusMap: (condition, status) -> taint.
CONDITION_TAINTS: Mapping[tuple[str, str], str] = {
    ("Ready", "False"): NOT_READY_TAINT,
    ("Ready", "Unknown"): UNREACHABLE_TAINT,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
}
CONDITION_TYPES = frozenset(kind for kind, _ in CONDITION_TAINTS)
"""The Node conditions whose status implies a taint."""


class Taint(NamedTuple):
    key: str
    value: str
    effect: str


CORDON = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")
"""What the node lifecycle controller taints a node with spec.unschedulable with."""


def taint_reason(taint: Taint) -> str:
    """pkg/scheduler/framework/plugins/tainttoleration, Filter."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


@dataclass(frozen=True)
class NodeFacts:
    """A Node as these filters see it."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    """The NoSchedule and NoExecute taints, with those spec.unschedulable and the conditions
    imply; empty for a node no pod is kept from."""
    unschedulable: bool = False


def node_facts(node: Json) -> NodeFacts:
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    taints = [_taint(t) for t in _list(spec.get("taints")) if isinstance(t, dict)]
    unschedulable = spec.get("unschedulable") is True
    implied = [CORDON] if unschedulable else []
    for condition in _list((node.get("status") or {}).get("conditions")):
        if isinstance(condition, dict):
            kind, status = _str(condition.get("type")), _str(condition.get("status"))
            key = CONDITION_TAINTS.get((kind, status))
            if key is not None:
                implied.append(Taint(key, "", "NoSchedule"))
    present = {(t.key, t.effect) for t in taints}
    taints += [t for t in implied if (t.key, t.effect) not in present]
    labels = meta.get("labels")
    return NodeFacts(
        name=str(meta.get("name") or ""),
        labels=labels if isinstance(labels, dict) else {},
        taints=tuple(t for t in taints if t.effect in REFUSING_EFFECTS),
        unschedulable=unschedulable,
    )


class Toleration(NamedTuple):
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """ToleratesTaint (k8s.io/api/core/v1 toleration.go): an empty effect matches every
        effect, an empty key with Exists every taint; an unknown operator tolerates nothing."""
        if (self.effect and self.effect != taint.effect) or (self.key and self.key != taint.key):
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


class NodeView(Protocol):
    """What the filters read of a node: NodeFacts, or a cache's own node view with these fields."""

    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def taints(self) -> tuple[Taint, ...]: ...
    @property
    def unschedulable(self) -> bool: ...


@dataclass(frozen=True)
class NodeConstraints:
    """What one pod demands of a node, compiled; equal (by `key`) for pods that demand the same."""

    key: Hashable
    tolerations: tuple[Toleration, ...] = field(compare=False)
    affinity: NodeTest | None = field(compare=False)
    """nodeSelector and required node affinity together; None when the pod has neither."""
    _tolerated: dict[Taint, bool] = field(default_factory=dict, compare=False, repr=False)
    """Memo: a cluster has few distinct taints and many nodes."""

    @classmethod
    def of(cls, pod: Json) -> NodeConstraints:
        spec = pod.get("spec") or {}
        selector = spec.get("nodeSelector")
        required = (((spec.get("affinity") or {}).get("nodeAffinity")) or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        tolerations = tuple(
            sorted({_toleration(t) for t in _list(spec.get("tolerations")) if isinstance(t, dict)})
        )
        key = (_frozen(selector), _frozen(required), tolerations)
        return cls(key, tolerations, node_affinity(selector, required))

    def refusal(self, node: NodeView) -> str | None:
        """Why the pod may not use the node, in kube-scheduler's words; None when it may."""
        if node.taints:
            if node.unschedulable and not self._tolerates(CORDON):
                return UNSCHEDULABLE_REASON
            for taint in node.taints:
                if not self._tolerates(taint):
                    return taint_reason(taint)
        if self.affinity is not None and not self.affinity(node.name, node.labels):
            return AFFINITY_REASON
        return None

    def _tolerates(self, taint: Taint) -> bool:
        known = self._tolerated.get(taint)
        if known is None:
            known = self._tolerated[taint] = any(t.tolerates(taint) for t in self.tolerations)
        return known


def _taint(raw: Json) -> Taint:
    return Taint(_str(raw.get("key")), _str(raw.get("value")), _str(raw.get("effect")))


def _toleration(raw: Json) -> Toleration:
    return Toleration(
        _str(raw.get("key")),
        _str(raw.get("operator")),
        _str(raw.get("value")),
        _str(raw.get("effect")),
    )


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _frozen(value: Any) -> Hashable:
    if isinstance(value, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value if isinstance(value, str | int | float | bool | None) else repr(value)
