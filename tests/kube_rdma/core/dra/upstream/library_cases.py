"""The semver and quantity CEL libraries' tests, case by case: TestSemver of k8s.io/apiserver
pkg/cel/library/semver_test.go and TestQuantity of quantity_test.go, translated from v0.34.9
(commit 9db42818bc of kubernetes/apiserver) and checked against release-1.35, release-1.36 and
master (semver_names.json, quantity_names.json; a name upstream uses twice is `name#2`).

Each case is an expression and what it gives: a value (a bool, an int, a float, or
`Semver("1.2.3")` / `Quantity("12Mi")` for the libraries' own types), RUNTIME (it fails to
evaluate) or COMPILE (it does not compile)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.kube_rdma.core.dra.upstream.builders import LeftOut

RUNTIME, COMPILE = "runtime error", "compile error"
_OVERLOAD = (
    "type checking: no overload for a list argument fails to evaluate here, to compile upstream"
)


@dataclass(frozen=True)
class Typed:
    kind: str
    """semver or quantity."""
    text: str


@dataclass(frozen=True)
class LibraryCase:
    name: str
    expression: str
    expect: Any


def _cases(*rows: tuple[str, str, Any] | LeftOut) -> dict[str, LibraryCase | LeftOut]:
    found: dict[str, LibraryCase | LeftOut] = {}
    for row in rows:
        entry = row if isinstance(row, LeftOut) else LibraryCase(*row)
        found[entry.name] = entry
    return found


SEMVER = _cases(
    ("parse", 'semver("1.2.3")', Typed("semver", "1.2.3")),
    ("parseInvalidVersion", 'semver("v1.0")', RUNTIME),
    ("isSemver", 'isSemver("1.2.3-beta.1+build.1")', True),
    ("isSemver_empty_false", 'isSemver("")', False),
    ("isSemver_v_prefix_false", 'isSemver("v1.0.0")', False),
    ("isSemver_v_leading_whitespace_false", 'isSemver(" 1.0.0")', False),
    ("isSemver_v_contains_whitespace_false", 'isSemver("1. 0.0")', False),
    ("isSemver_v_trailing_whitespace_false", 'isSemver("1.0.0 ")', False),
    ("isSemver_leading_zeros_false", 'isSemver("01.01.01")', False),
    ("isSemver_major_only_false", 'isSemver("1")', False),
    ("isSemver_major_minor_only_false", 'isSemver("1.1")', False),
    ("isSemver_empty_normalize_false", 'isSemver("", true)', False),
    ("isSemver_v_leading_whitespace_normalize_false", 'isSemver(" 1.0.0", true)', False),
    ("isSemver_v_contains_whitespace_normalize_false", 'isSemver("1. 0.0", true)', False),
    ("isSemver_v_trailing_whitespace_normalize_false", 'isSemver("1.0.0 ", true)', False),
    ("isSemver_v_prefix_normalize_true", 'isSemver("v1.0.0", true)', True),
    ("isSemver_leading_zeros_normalize_true", 'isSemver("01.01.01", true)', True),
    ("isSemver_major_only_normalize_true", 'isSemver("1", true)', True),
    ("isSemver_major_minor_only_normalize_true", 'isSemver("1.1", true)', True),
    LeftOut("isSemver_noOverload", _OVERLOAD),
    ("equality_normalize", 'semver("v01.01", true) == semver("1.1.0")', True),
    ("equality_reflexivity", 'semver("1.2.3") == semver("1.2.3")', True),
    ("inequality", 'semver("1.2.3") == semver("1.0.0")', False),
    ("semver_less", 'semver("1.0.0").isLessThan(semver("1.2.3"))', True),
    ("semver_less_false", 'semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    ("semver_greater", 'semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    ("semver_greater_false", 'semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    ("compare_equal", 'semver("1.2.3").compareTo(semver("1.2.3"))', 0),
    ("compare_less", 'semver("1.0.0").compareTo(semver("1.2.3"))', -1),
    ("compare_greater", 'semver("1.2.3").compareTo(semver("1.0.0"))', 1),
    ("major", 'semver("1.2.3").major()', 1),
    ("minor", 'semver("1.2.3").minor()', 2),
    ("patch", 'semver("1.2.3").patch()', 3),
)

_BIG = "9999999999999999999999999999999999999"
QUANTITY = _cases(
    ("parse", 'quantity("12Mi")', Typed("quantity", "12Mi")),
    ("parseInvalidSuffix", 'quantity("10Mo")', RUNTIME),
    ("parseInvalidSuffixPassesRegex", 'quantity("10Mm")', RUNTIME),
    ("isQuantity", 'isQuantity("20")', True),
    ("isQuantity_megabytes", 'isQuantity("20M")', True),
    ("isQuantity_mebibytes", 'isQuantity("20Mi")', True),
    ("isQuantity_invalidSuffix", 'isQuantity("20Mo")', False),
    ("isQuantity_passingRegex", 'isQuantity("10Mm")', False),
    LeftOut("isQuantity_noOverload", _OVERLOAD),
    ("equality_reflexivity", 'quantity("200M") == quantity("200M")', True),
    (
        "equality_symmetry",
        'quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")',
        True,
    ),
    (
        "equality_transitivity",
        'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && '
        'quantity("0.002G") == quantity("2000k")',
        True,
    ),
    ("inequality", 'quantity("200M") == quantity("0.3G")', False),
    ("quantity_less", 'quantity("50M").isLessThan(quantity("50Mi"))', True),
    ("quantity_less_obvious", 'quantity("50M").isLessThan(quantity("100M"))', True),
    ("quantity_less_false", 'quantity("100M").isLessThan(quantity("50M"))', False),
    ("quantity_greater", 'quantity("50Mi").isGreaterThan(quantity("50M"))', True),
    ("quantity_greater_obvious", 'quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    ("quantity_greater_false", 'quantity("50M").isGreaterThan(quantity("100M"))', False),
    ("compare_equal", 'quantity("200M").compareTo(quantity("0.2G"))', 0),
    ("compare_less", 'quantity("50M").compareTo(quantity("50Mi"))', -1),
    ("compare_greater", 'quantity("50Mi").compareTo(quantity("50M"))', 1),
    ("add_quantity", 'quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    ("add_int", 'quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    ("sub_quantity", 'quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    ("sub_int", 'quantity("50k").sub(20) == quantity("49980")', True),
    ("arith_chain_1", 'quantity("50k").add(20).sub(quantity("100k")).asInteger()', -49980),
    (
        "arith_chain",
        'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()',
        20,
    ),
    ("as_integer", 'quantity("50k").asInteger()', 50000),
    ("as_integer_error", f'quantity("{_BIG}G").asInteger()', RUNTIME),
    ("is_integer", f'quantity("{_BIG}G").isInteger()', False),
    ("is_integer#2", 'quantity("50").isInteger()', True),
    ("as_float", 'quantity("50.703k").asApproximateFloat()', 50703.0),
    (
        "add_does_not_mutate_receiver",
        f'[quantity("{_BIG}")].all(x, x.add(quantity("1")).compareTo(x.add(quantity("2"))) == -1)',
        True,
    ),
)
