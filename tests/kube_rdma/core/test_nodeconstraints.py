"""The node filters against kube-scheduler's documented cases.

The NodeAffinity cases are those of kubernetes pkg/scheduler/framework/plugins/nodeaffinity/
node_affinity_test.go, TestNodeAffinity (named as there), the TaintToleration ones those of
pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go,
TestTaintTolerationFilter, and the toleration rule that of k8s.io/api/core/v1 toleration.go,
ToleratesTaint.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube_rdma.core.nodeconstraints import (
    AFFINITY_REASON,
    UNSCHEDULABLE_REASON,
    NodeConstraints,
    NodeFacts,
    Taint,
    Toleration,
    node_facts,
)
from kube_rdma.core.objects import Json


def pod(**spec: Any) -> Json:
    return {"metadata": {"name": "p"}, "spec": spec}


def required(*terms: Json) -> Json:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expr(key: str, operator: str, *values: str) -> Json:
    return {"key": key, "operator": operator, "values": list(values)}


def exprs(*requirements: Json) -> Json:
    return {"matchExpressions": list(requirements)}


def name_in(*names: str) -> Json:
    return {"matchFields": [expr("metadata.name", "In", name) for name in names]}


def node(name: str = "", labels: dict[str, str] | None = None, **spec: Any) -> Json:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def refusal(the_pod: Json, the_node: Json) -> str | None:
    return NodeConstraints.of(the_pod).refusal(node_facts(the_node))


AFFINITY_CASES = [
    ("missing labels", pod(nodeSelector={"foo": "bar"}), node(), AFFINITY_REASON),
    ("same labels", pod(nodeSelector={"foo": "bar"}), node(labels={"foo": "bar"}), None),
    (
        "node labels are superset",
        pod(nodeSelector={"foo": "bar"}),
        node(labels={"foo": "bar", "baz": "blah"}),
        None,
    ),
    (
        "node labels are subset",
        pod(nodeSelector={"foo": "bar", "baz": "blah"}),
        node(labels={"foo": "bar"}),
        AFFINITY_REASON,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        pod(affinity=required(exprs(expr("foo", "In", "bar", "value2")))),
        node(labels={"foo": "bar"}),
        None,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        pod(affinity=required(exprs(expr("kernel-version", "Gt", "0204")))),
        node(labels={"kernel-version": "0206"}),
        None,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        pod(affinity=required(exprs(expr("mem-type", "NotIn", "DDR", "DDR2")))),
        node(labels={"mem-type": "DDR3"}),
        None,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        pod(affinity=required(exprs(expr("GPU", "Exists")))),
        node(labels={"GPU": "NVIDIA-GRID-K1"}),
        None,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        pod(affinity=required(exprs(expr("foo", "In", "value1", "value2")))),
        node(labels={"foo": "bar"}),
        AFFINITY_REASON,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't "
        "schedule onto the node",
        pod(affinity=required(exprs())),
        node(labels={"foo": "bar"}),
        AFFINITY_REASON,
    ),
    ("Pod with no Affinity will schedule onto a node", pod(), node(labels={"foo": "bar"}), None),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}),
        node(labels={"foo": "bar"}),
        None,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        pod(affinity=required(exprs(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")))),
        node(labels={"GPU": "NVIDIA-GRID-K1"}),
        None,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        pod(affinity=required(exprs(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")))),
        node(labels={"GPU": "NVIDIA-GRID-K1"}),
        AFFINITY_REASON,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and "
        "will schedule onto the node",
        pod(
            affinity=required(
                exprs(expr("foo", "In", "bar", "value2")),
                exprs(expr("diffkey", "In", "wrong", "value2")),
            )
        ),
        node(labels={"foo": "bar"}),
        None,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) "
        "both are satisfied, will schedule onto the node",
        pod(nodeSelector={"foo": "bar"}, affinity=required(exprs(expr("foo", "Exists")))),
        node(labels={"foo": "bar"}),
        None,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing "
        "that we are deprecating) is not satisfied, won't schedule onto the node",
        pod(nodeSelector={"foo": "bar"}, affinity=required(exprs(expr("foo", "Exists")))),
        node(labels={"foo": "barrrrrr"}),
        AFFINITY_REASON,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        pod(affinity=required(exprs(expr("foo", "NotIn", "invalid value: ___@#$%^")))),
        node(labels={"foo": "bar"}),
        AFFINITY_REASON,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        pod(affinity=required(name_in("node1"))),
        node("node1"),
        None,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        pod(affinity=required(name_in("node1"))),
        node("node2"),
        AFFINITY_REASON,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        pod(affinity=required(name_in("node1", "node2"), exprs(expr("foo", "In", "bar")))),
        node("node2", {"foo": "bar"}),
        None,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        pod(affinity=required({**name_in("node1"), **exprs(expr("foo", "In", "bar"))})),
        node("node2", {"foo": "bar"}),
        AFFINITY_REASON,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        pod(affinity=required({**name_in("node1"), **exprs(expr("foo", "In", "bar"))})),
        node("node1", {"foo": "bar"}),
        None,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        pod(affinity=required(name_in("node1"), exprs(expr("foo", "In", "not-match-to-bar")))),
        node("node2", {"foo": "bar"}),
        AFFINITY_REASON,
    ),
    (
        "Pod with two terms of node.Name affinity",
        pod(affinity=required(name_in("node1"), name_in("node2"))),
        node("node2"),
        None,
    ),
    (
        "Pod with two conflicting mach field requirements",
        pod(affinity=required(name_in("node1", "node2"))),
        node("node2", {"foo": "bar"}),
        AFFINITY_REASON,
    ),
]


@pytest.mark.parametrize(
    ("the_pod", "the_node", "reason"),
    [c[1:] for c in AFFINITY_CASES],
    ids=[c[0] for c in AFFINITY_CASES],
)
def test_node_affinity_as_kube_scheduler(the_pod: Json, the_node: Json, reason: str | None) -> None:
    assert refusal(the_pod, the_node) == reason


# Rules of component-helpers nodeaffinity and apimachinery labels that the plugin's cases leave out.
SELECTOR_RULES = [
    ("an empty list of terms matches nothing", required(), {"a": "1"}, AFFINITY_REASON),
    (
        "a term with neither kind of requirement matches nothing",
        required({}),
        {"a": "1"},
        AFFINITY_REASON,
    ),
    (
        "an empty term is skipped, the other still matches",
        required({}, exprs(expr("a", "In", "1"))),
        {"a": "1"},
        None,
    ),
    ("NotIn matches a node without the label", required(exprs(expr("a", "NotIn", "1"))), {}, None),
    (
        "In never matches a node without the label",
        required(exprs(expr("a", "In", "1"))),
        {},
        AFFINITY_REASON,
    ),
    ("DoesNotExist", required(exprs(expr("a", "DoesNotExist"))), {"b": "1"}, None),
    (
        "DoesNotExist, label present",
        required(exprs(expr("a", "DoesNotExist"))),
        {"a": ""},
        AFFINITY_REASON,
    ),
    ("Lt compares numbers, not strings", required(exprs(expr("n", "Lt", "10"))), {"n": "9"}, None),
    (
        "Gt with a label that is no number",
        required(exprs(expr("n", "Gt", "1"))),
        {"n": "x"},
        AFFINITY_REASON,
    ),
    ("Gt with a label missing", required(exprs(expr("n", "Gt", "1"))), {}, AFFINITY_REASON),
    (
        "Gt with a value that is no number does not parse",
        required(exprs(expr("n", "Gt", "1.5"))),
        {"n": "9"},
        AFFINITY_REASON,
    ),
    (
        "Gt with two values does not parse",
        required(exprs(expr("n", "Gt", "1", "2"))),
        {"n": "9"},
        AFFINITY_REASON,
    ),
    ("In without values does not parse", required(exprs(expr("a", "NotIn"))), {}, AFFINITY_REASON),
    (
        "Exists with values does not parse",
        required(exprs(expr("a", "Exists", "1"))),
        {"a": "1"},
        AFFINITY_REASON,
    ),
    (
        "an unknown operator does not parse",
        required(exprs(expr("a", "Equals", "1"))),
        {"a": "1"},
        AFFINITY_REASON,
    ),
    (
        "an invalid key does not parse",
        required(exprs(expr("a b", "Exists"))),
        {"a b": "1"},
        AFFINITY_REASON,
    ),
    (
        "a prefixed key",
        required(exprs(expr("example.com/pool", "In", "a"))),
        {"example.com/pool": "a"},
        None,
    ),
    (
        "a term that does not parse never matches, the next one may",
        required(exprs(expr("a", "Gt", "x")), exprs(expr("a", "Exists"))),
        {"a": "1"},
        None,
    ),
    (
        "matchFields on metadata.name with NotIn",
        required({"matchFields": [expr("metadata.name", "NotIn", "n2")]}),
        {},
        None,
    ),
    (
        "matchFields with two values does not parse",
        required({"matchFields": [expr("metadata.name", "In", "n1", "n2")]}),
        {},
        AFFINITY_REASON,
    ),
    (
        "matchFields on another field reads it empty",
        required({"matchFields": [expr("spec.x", "NotIn", "v")]}),
        {},
        None,
    ),
]


@pytest.mark.parametrize(
    ("affinity", "labels", "reason"),
    [c[1:] for c in SELECTOR_RULES],
    ids=[c[0] for c in SELECTOR_RULES],
)
def test_selector_rules(affinity: Json, labels: dict[str, str], reason: str | None) -> None:
    assert refusal(pod(affinity=affinity), node("n1", labels)) == reason


def tolerating(*tolerations: Json) -> Json:
    return pod(tolerations=list(tolerations))


def tainted(*taints: Json) -> Json:
    return node("nodeA", taints=list(taints))


TAINT_CASES = [
    (
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        tolerating(),
        tainted({"key": "dedicated", "value": "user1", "effect": "NoSchedule"}),
        "node(s) had untolerated taint {dedicated: user1}",
    ),
    (
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        tolerating({"key": "dedicated", "value": "user1", "effect": "NoSchedule"}),
        tainted({"key": "dedicated", "value": "user1", "effect": "NoSchedule"}),
        None,
    ),
    (
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect "
        "NoSchedule",
        tolerating(
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}
        ),
        tainted({"key": "dedicated", "value": "user1", "effect": "NoSchedule"}),
        "node(s) had untolerated taint {dedicated: user1}",
    ),
    (
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that "
        "tolerates the taints on the node",
        tolerating({"key": "foo", "operator": "Exists", "effect": "NoSchedule"}),
        tainted({"key": "foo", "value": "bar", "effect": "NoSchedule"}),
        None,
    ),
    (
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, "
        "pod can be scheduled onto the node",
        tolerating(
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
        ),
        tainted(
            {"key": "dedicated", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "value": "bar", "effect": "NoSchedule"},
        ),
        None,
    ),
    (
        "A pod has a toleration that keys and values match the taint on the node, but (non-empty) "
        "effect doesn't match, can't be scheduled onto the node",
        tolerating(
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}
        ),
        tainted({"key": "foo", "value": "bar", "effect": "NoSchedule"}),
        "node(s) had untolerated taint {foo: bar}",
    ),
    (
        "The pod has a toleration that keys and values match the taint on the node, the effect of "
        "toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the "
        "node",
        tolerating({"key": "foo", "operator": "Equal", "value": "bar"}),
        tainted({"key": "foo", "value": "bar", "effect": "NoSchedule"}),
        None,
    ),
    (
        "The pod has a toleration that key and value don't match the taint on the node, but the "
        "effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        tolerating(
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}
        ),
        tainted({"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}),
        None,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can "
        "be scheduled onto the node",
        tolerating(),
        tainted({"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}),
        None,
    ),
    (
        "a NoExecute taint refuses as NoSchedule does",
        tolerating(),
        tainted({"key": "gpu", "value": "broken", "effect": "NoExecute"}),
        "node(s) had untolerated taint {gpu: broken}",
    ),
    (
        "the first untolerated taint is named",
        tolerating({"key": "a", "operator": "Exists"}),
        tainted({"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}),
        "node(s) had untolerated taint {b: }",
    ),
    (
        "Exists with an empty key tolerates every taint",
        tolerating({"operator": "Exists"}),
        tainted(
            {"key": "a", "value": "1", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}
        ),
        None,
    ),
]


@pytest.mark.parametrize(
    ("the_pod", "the_node", "reason"), [c[1:] for c in TAINT_CASES], ids=[c[0] for c in TAINT_CASES]
)
def test_taint_toleration_as_kube_scheduler(
    the_pod: Json, the_node: Json, reason: str | None
) -> None:
    assert refusal(the_pod, the_node) == reason


TOLERATES = [
    (
        "empty effect matches every effect",
        Toleration("k", "Exists", "", ""),
        Taint("k", "v", "NoExecute"),
        True,
    ),
    (
        "another effect",
        Toleration("k", "Exists", "", "NoSchedule"),
        Taint("k", "v", "NoExecute"),
        False,
    ),
    ("another key", Toleration("k", "Exists", "", ""), Taint("j", "v", "NoSchedule"), False),
    (
        "empty operator means Equal",
        Toleration("k", "", "v", ""),
        Taint("k", "v", "NoSchedule"),
        True,
    ),
    (
        "Equal compares values",
        Toleration("k", "Equal", "w", ""),
        Taint("k", "v", "NoSchedule"),
        False,
    ),
    (
        "Equal with both values empty",
        Toleration("k", "Equal", "", ""),
        Taint("k", "", "NoSchedule"),
        True,
    ),
    (
        "an unknown operator tolerates nothing",
        Toleration("k", "Gt", "v", ""),
        Taint("k", "v", "NoSchedule"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"), [c[1:] for c in TOLERATES], ids=[c[0] for c in TOLERATES]
)
def test_tolerates_taint(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert toleration.tolerates(taint) is expected


def ready(status: str) -> Json:
    return {"conditions": [{"type": "Ready", "status": status}]}


NODE_STATES = [
    (
        "a cordoned node",
        pod(),
        {**node("n"), "spec": {"unschedulable": True}},
        UNSCHEDULABLE_REASON,
    ),
    (
        "a cordoned node, the pod tolerating it",
        tolerating(
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ),
        {**node("n"), "spec": {"unschedulable": True}},
        None,
    ),
    (
        "cordoned and tainted: NodeUnschedulable runs first",
        pod(),
        {
            **node("n"),
            "spec": {"unschedulable": True, "taints": [{"key": "t", "effect": "NoSchedule"}]},
        },
        UNSCHEDULABLE_REASON,
    ),
    (
        "Ready False",
        pod(),
        {**node("n"), "status": ready("False")},
        "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
    ),
    (
        "Ready Unknown",
        pod(),
        {**node("n"), "status": ready("Unknown")},
        "node(s) had untolerated taint {node.kubernetes.io/unreachable: }",
    ),
    ("Ready True", pod(), {**node("n"), "status": ready("True")}, None),
    ("no conditions at all counts as ready", pod(), node("n"), None),
    (
        "not ready, tolerated as DaemonSet pods are",
        tolerating(
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}
        ),
        {**node("n"), "status": ready("False")},
        None,
    ),
    (
        "not ready: the default NoExecute tolerations of admission do not help",
        tolerating(
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ),
        {**node("n"), "status": ready("False")},
        "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
    ),
    (
        "memory pressure",
        pod(),
        {**node("n"), "status": {"conditions": [{"type": "MemoryPressure", "status": "True"}]}},
        "node(s) had untolerated taint {node.kubernetes.io/memory-pressure: }",
    ),
    (
        "taints come before affinity",
        pod(nodeSelector={"a": "1"}),
        tainted({"key": "t", "effect": "NoSchedule"}),
        "node(s) had untolerated taint {t: }",
    ),
]


@pytest.mark.parametrize(
    ("the_pod", "the_node", "reason"), [c[1:] for c in NODE_STATES], ids=[c[0] for c in NODE_STATES]
)
def test_cordons_and_readiness(the_pod: Json, the_node: Json, reason: str | None) -> None:
    assert refusal(the_pod, the_node) == reason


def test_node_facts_imply_taints_once() -> None:
    whole = {
        "metadata": {"name": "n", "labels": {"a": "1"}},
        "spec": {
            "unschedulable": True,
            "taints": [
                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                {"key": "soft", "effect": "PreferNoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "x"},
            ],
        },
        "status": ready("False"),
    }
    assert node_facts(whole) == NodeFacts(
        name="n",
        labels={"a": "1"},
        taints=(
            Taint("node.kubernetes.io/not-ready", "", "NoSchedule"),
            Taint("node.kubernetes.io/not-ready", "", "NoExecute"),
            Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),
        ),
        unschedulable=True,
    )


def test_malformed_parts_refuse_rather_than_raise() -> None:
    broken = pod(
        nodeSelector="pool=a",
        tolerations=[5, {"key": 3}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [7]}
            }
        },
    )
    assert refusal(broken, node("n", {"pool": "a"})) == AFFINITY_REASON
    assert node_facts(
        {"metadata": None, "spec": {"taints": "x"}, "status": {"conditions": [1]}}
    ) == NodeFacts("", {}, ())


KEYS = [
    (
        "tolerations in another order and with tolerationSeconds",
        pod(
            tolerations=[
                {"key": "a", "operator": "Exists"},
                {"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ]
        ),
        pod(
            tolerations=[
                {"key": "b", "operator": "Exists", "effect": "NoExecute"},
                {"key": "a", "operator": "Exists"},
            ]
        ),
        True,
    ),
    (
        "nodeSelector pairs in another order",
        pod(nodeSelector={"a": "1", "b": "2"}),
        pod(nodeSelector={"b": "2", "a": "1"}),
        True,
    ),
    ("a master pinned, a worker not", pod(nodeSelector={"pool": "a"}), pod(), False),
    ("different tolerations", pod(tolerations=[{"key": "a", "operator": "Exists"}]), pod(), False),
    (
        "different affinity",
        pod(affinity=required(exprs(expr("a", "Exists")))),
        pod(affinity=required(exprs(expr("b", "Exists")))),
        False,
    ),
]


@pytest.mark.parametrize(
    ("first", "second", "same"), [c[1:] for c in KEYS], ids=[c[0] for c in KEYS]
)
def test_key_groups_pods_with_the_same_constraints(first: Json, second: Json, same: bool) -> None:
    assert (NodeConstraints.of(first).key == NodeConstraints.of(second).key) is same
    assert (NodeConstraints.of(first) == NodeConstraints.of(second)) is same


LABEL_VALUES = st.sampled_from(["", "a", "b", "1", "10", "x"])
LABELS = st.dictionaries(
    st.sampled_from(["pool", "zone", "n"]),
    st.sampled_from(["", "a", "1", "10", "-3", "x"]),
    max_size=3,
)
OPERATORS = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])


@st.composite
def requirements(draw: st.DrawFn) -> Json:
    operator = draw(OPERATORS)
    key = draw(st.sampled_from(["pool", "zone", "n"]))
    if operator in ("Exists", "DoesNotExist"):
        values: list[str] = []
    elif operator in ("Gt", "Lt"):
        values = [draw(st.sampled_from(["1", "5", "0"]))]
    else:
        values = draw(st.lists(LABEL_VALUES, min_size=1, max_size=3))
    return expr(key, operator, *values)


def holds(requirement: Json, labels: dict[str, str]) -> bool:
    """The rule of apimachinery labels.Requirement.Matches, written out plainly."""
    key, op, values = requirement["key"], requirement["operator"], requirement["values"]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    try:
        number = int(labels[key]) if present else None
    except ValueError:
        number = None
    if number is None:
        return False
    return number > int(values[0]) if op == "Gt" else number < int(values[0])


@given(st.lists(st.lists(requirements(), min_size=1, max_size=3), min_size=1, max_size=3), LABELS)
def test_terms_are_ored_and_requirements_anded(
    terms: list[list[Json]], labels: dict[str, str]
) -> None:
    the_pod = pod(affinity=required(*[exprs(*t) for t in terms]))
    admitted = any(all(holds(r, labels) for r in term) for term in terms)
    assert refusal(the_pod, node("n", labels)) == (None if admitted else AFFINITY_REASON)
