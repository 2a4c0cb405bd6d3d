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
- NodeAffinity: spec.nodeSelector and the required node affinity, with the rules of
  k8s.io/component-helpers/scheduling/corev1/nodeaffinity (terms ORed, a term's requirements
  ANDed, an empty term or one that does not parse matching nothing).

A pod's constraints are compiled once (`NodeConstraints.of`) and then judged against thousands of
nodes: a pod with no selector, affinity or toleration costs one attribute test per untainted node.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

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


NodeTest = Callable[[NodeView], bool]


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
        return cls(key, tolerations, _affinity(selector, required))

    def refusal(self, node: NodeView) -> str | None:
        """Why the pod may not use the node, in kube-scheduler's words; None when it may."""
        if node.taints:
            if node.unschedulable and not self._tolerates(CORDON):
                return UNSCHEDULABLE_REASON
            for taint in node.taints:
                if not self._tolerates(taint):
                    return taint_reason(taint)
        if self.affinity is not None and not self.affinity(node):
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


# NodeAffinity


def _affinity(selector: Any, required: Any) -> NodeTest | None:
    """GetRequiredNodeAffinity and its Match: the nodeSelector, then the required terms."""
    tests: list[NodeTest] = []
    if selector is not None and selector != {}:
        tests.append(_selector(selector))
    if required is not None:
        tests.append(_terms(required))
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    first, second = tests
    return lambda node: first(node) and second(node)


def _selector(selector: Any) -> NodeTest:
    """labels.SelectorFromSet: every pair present on the node."""
    if not isinstance(selector, dict):
        return _nothing
    pairs = tuple(selector.items())
    if len(pairs) == 1:  # the usual pool label, without a generator per node
        ((key, value),) = pairs
        return lambda node: node.labels.get(key) == value
    return lambda node: all(node.labels.get(k) == v for k, v in pairs)


def _terms(required: Any) -> NodeTest:
    """NewLazyErrorNodeSelector: empty terms are dropped, terms that do not parse never match,
    so no terms at all match nothing."""
    raw = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    terms = [_term(t) for t in _list(raw) if not _empty_term(t)]
    compiled = tuple(t for t in terms if t is not None)
    if not compiled:
        return _nothing
    if len(compiled) == 1:
        return compiled[0]
    return lambda node: any(term(node) for term in compiled)


def _nothing(node: NodeView) -> bool:
    return False


def _empty_term(term: Any) -> bool:
    return (
        isinstance(term, dict) and not term.get("matchExpressions") and not term.get("matchFields")
    )


def _term(term: Any) -> NodeTest | None:
    """newNodeSelectorTerm; None when any requirement does not parse."""
    if not isinstance(term, dict):
        return None
    expressions = [_label_requirement(r) for r in _list(term.get("matchExpressions"))]
    fields = [_field_requirement(r) for r in _list(term.get("matchFields"))]
    if None in expressions or None in fields:
        return None
    labels = tuple(e for e in expressions if e is not None)
    names = tuple(f for f in fields if f is not None)

    def match(node: NodeView) -> bool:
        if not all(test(node.labels) for test in labels):
            return False
        # nodeSelectorTerm.match: the fields are only checked when the node has a name.
        return not node.name or all(test(node.name) for test in names)

    return match


LabelTest = Callable[[Mapping[str, str]], bool]


def _label_requirement(raw: Any) -> LabelTest | None:
    """labels.NewRequirement with the NodeSelectorOp operators; None when it would not parse."""
    if not isinstance(raw, dict):
        return None
    key, op, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(key, str) or not _qualified_name(key) or not isinstance(values, list):
        return None
    if not all(isinstance(v, str) and _label_value(v) for v in values):
        return None
    return _LABEL_OPERATORS.get(str(op), _unparsable)(key, values)


def _unparsable(key: str, values: list[str]) -> LabelTest | None:
    return None


def _in(key: str, values: list[str]) -> LabelTest | None:
    wanted = frozenset(values)
    return (lambda labels: labels.get(key) in wanted) if wanted else None


def _not_in(key: str, values: list[str]) -> LabelTest | None:
    unwanted = frozenset(values)
    return (lambda labels: labels.get(key) not in unwanted) if unwanted else None


def _exists(key: str, values: list[str]) -> LabelTest | None:
    return None if values else (lambda labels: key in labels)


def _does_not_exist(key: str, values: list[str]) -> LabelTest | None:
    return None if values else (lambda labels: key not in labels)


def _greater(key: str, values: list[str]) -> LabelTest | None:
    bound = _int64(values[0]) if len(values) == 1 else None
    if bound is None:
        return None
    return lambda labels: (n := _int64(labels.get(key))) is not None and n > bound


def _less(key: str, values: list[str]) -> LabelTest | None:
    bound = _int64(values[0]) if len(values) == 1 else None
    if bound is None:
        return None
    return lambda labels: (n := _int64(labels.get(key))) is not None and n < bound


_LABEL_OPERATORS: Mapping[str, Callable[[str, list[str]], LabelTest | None]] = {
    "In": _in,
    "NotIn": _not_in,
    "Exists": _exists,
    "DoesNotExist": _does_not_exist,
    "Gt": _greater,
    "Lt": _less,
}


def _field_requirement(raw: Any) -> Callable[[str], bool] | None:
    """nodeSelectorRequirementsAsFieldSelector: In or NotIn with exactly one value, on the node's
    fields, of which only metadata.name exists (any other field reads as empty)."""
    if not isinstance(raw, dict):
        return None
    key, op, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], str):
        return None
    value = values[0]
    if op == "In":
        return (lambda name: name == value) if key == "metadata.name" else (lambda _: value == "")
    if op == "NotIn":
        return (lambda name: name != value) if key == "metadata.name" else (lambda _: value != "")
    return None


_INT = re.compile(r"[+-]?[0-9]+")
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
INT64 = (-(2**63), 2**63 - 1)


def _int64(text: str | None) -> int | None:
    """strconv.ParseInt(text, 10, 64): sign and decimal digits, within int64; else None."""
    if text is None or not _INT.fullmatch(text):
        return None
    number = int(text)
    return number if INT64[0] <= number <= INT64[1] else None


def _qualified_name(key: str) -> bool:
    """validation.IsQualifiedName: [prefix/]name, a DNS subdomain prefix and a 63-char name."""
    parts: Sequence[str] = key.split("/")
    if len(parts) > 2:
        return False
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return False
    return 0 < len(name) <= 63 and bool(_NAME.fullmatch(name))


def _label_value(value: str) -> bool:
    """validation.IsValidLabelValue: empty, or up to 63 characters of the name alphabet."""
    return value == "" or (len(value) <= 63 and bool(_NAME.fullmatch(value)))
