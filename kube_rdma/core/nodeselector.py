"""A pod's required node affinity, compiled: spec.nodeSelector and
requiredDuringSchedulingIgnoredDuringExecution, with the rules of
k8s.io/component-helpers/scheduling/corev1/nodeaffinity (GetRequiredNodeAffinity,
NewLazyErrorNodeSelector) and k8s.io/apimachinery labels.NewRequirement.

Terms are ORed and a term's requirements ANDed; an empty term, or one with a requirement that
would not parse (an unknown operator, a wrong number of values, an invalid key or label value, a
Gt/Lt bound that is no integer), matches no node, as kube-scheduler ignores such parse errors and
the term never matches. kube_rdma.core.nodeconstraints judges nodes with the result. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

NodeTest = Callable[[str, Mapping[str, str]], bool]
"""(node name, node labels) -> whether the node matches."""


def node_affinity(selector: Any, required: Any) -> NodeTest | None:
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
    return lambda name, labels: first(name, labels) and second(name, labels)


def _selector(selector: Any) -> NodeTest:
    """labels.SelectorFromSet: every pair present on the node."""
    if not isinstance(selector, dict):
        return _nothing
    pairs = tuple(selector.items())
    if len(pairs) == 1:  # the usual pool label, without a generator per node
        ((key, value),) = pairs
        return lambda name, labels: labels.get(key) == value
    return lambda name, labels: all(labels.get(k) == v for k, v in pairs)


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
    return lambda name, labels: any(term(name, labels) for term in compiled)


def _nothing(name: str, labels: Mapping[str, str]) -> bool:
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
    label_tests = tuple(e for e in expressions if e is not None)
    name_tests = tuple(f for f in fields if f is not None)

    def match(name: str, labels: Mapping[str, str]) -> bool:
        if not all(test(labels) for test in label_tests):
            return False
        # nodeSelectorTerm.match: the fields are only checked when the node has a name.
        return not name or all(test(name) for test in name_tests)

    return match


LabelTest = Callable[[Mapping[str, str]], bool]


def _label_requirement(raw: Any) -> LabelTest | None:
    """labels.NewRequirement with the NodeSelectorOp operators; None when it would not parse."""
    if not isinstance(raw, dict):
        return None
    key, op, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
    if not isinstance(key, str) or not qualified_name(key) or not isinstance(values, list):
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


def qualified_name(key: str) -> bool:
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


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
