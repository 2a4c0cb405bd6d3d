"""PodDisruptionBudgets as kube-scheduler's preemption and the apiserver's eviction read them.

Preemption only counts violations, best effort (kubernetes pkg/scheduler/framework/plugins/
defaultpreemption/default_preemption.go, filterPodsWithPDBViolation): each budget's
`status.disruptionsAllowed` is spent by the victims it selects, in order, and a victim that takes
it below zero violates it. Eviction refuses outright (pkg/registry/core/pod/storage/eviction.go):
a pod selected by a budget with no disruption allowed is answered 429.

`disruptions_allowed` is the disruption controller's arithmetic (pkg/controller/disruption/
disruption.go, getExpectedPodCount and updatePdbStatus) for budgets whose pods no scale
controller counts: the expected pods are the selected ones, a percentage is rounded up, and every
selected pod bound to a node counts as healthy (the simulator's pods are ready once bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kube_rdma.core.objects import Json


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector then Matches; a missing or empty selector matches nothing
    here, as kube-scheduler treats a budget's (an unusable selector matches nothing too)."""
    if not isinstance(selector, dict):
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return False
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    return all(_expression(e, labels) for e in expressions)


def _expression(expression: Any, labels: Mapping[str, str]) -> bool:
    if not isinstance(expression, dict):
        return False
    key, operator = str(expression.get("key")), expression.get("operator")
    values = expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


def selects(pdb: Json, pod: Json) -> bool:
    """The budget is in the pod's namespace and its selector matches the pod's labels."""
    pdb_meta, pod_meta = pdb.get("metadata") or {}, pod.get("metadata") or {}
    if (pdb_meta.get("namespace") or "default") != (pod_meta.get("namespace") or "default"):
        return False
    labels = pod_meta.get("labels") or {}
    return bool(labels) and selector_matches((pdb.get("spec") or {}).get("selector"), labels)


def split_by_violation(pods: Sequence[Json], pdbs: Sequence[Json]) -> tuple[list[Json], list[Json]]:
    """filterPodsWithPDBViolation: (violating, non-violating), each in the order given. A pod
    already in a budget's `status.disruptedPods` does not spend that budget again."""
    allowed = [int((p.get("status") or {}).get("disruptionsAllowed") or 0) for p in pdbs]
    violating: list[Json] = []
    others: list[Json] = []
    for pod in pods:
        name = (pod.get("metadata") or {}).get("name")
        violated = False
        for index, pdb in enumerate(pdbs):
            if not selects(pdb, pod):
                continue
            if name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                continue
            allowed[index] -= 1
            if allowed[index] < 0:
                violated = True
        (violating if violated else others).append(pod)
    return violating, others


def disruptions_allowed(pdb: Json, pods: Iterable[Json]) -> int:
    """How many of the budget's pods may go now: healthy minus desired healthy, at least 0."""
    selected = [p for p in pods if selects(pdb, p)]
    expected = len(selected)
    healthy = sum(1 for p in selected if (p.get("spec") or {}).get("nodeName"))
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected))
    elif spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected)
    else:
        desired = expected
    return max(0, healthy - desired)


def _scaled(value: Any, total: int) -> int:
    """An int-or-percent, a percentage of `total` rounded up (intstr.GetScaledValueFromIntOrPercent
    with roundUp, as the disruption controller calls it)."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)
