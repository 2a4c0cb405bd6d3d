"""The Kubernetes CEL libraries DRA selectors use beyond standard CEL, for cel-python.

kube-scheduler compiles selectors in the Kubernetes base environment extended for DRA
(k8s.io/dynamic-resource-allocation/cel, compile.go; k8s.io/apiserver/pkg/cel/environment,
base.go). Of its libraries, these two are what device selectors compare with:

- semver (k8s.io/apiserver/pkg/cel/library/semverlib.go, version 1 since Kubernetes 1.33):
  `semver(s)`, `semver(s, normalize)`, `isSemver(...)`, and on a version `compareTo`,
  `isGreaterThan`, `isLessThan`, `major()`, `minor()`, `patch()`. A `version` attribute is
  presented as such a value.
- quantity (library/quantity.go): `quantity(s)`, `isQuantity(s)`, and on a quantity
  `compareTo`, `isGreaterThan`, `isLessThan`, `sign()`, `isInteger()`, `asInteger()`,
  `asApproximateFloat()`, `add(...)`, `sub(...)`. Every capacity is presented as a quantity.

cel-python calls a method as a function of its receiver, so `compareTo` and the other names
both libraries define dispatch on the receiver's type; a call no overload fits raises
TypeError, which cel-python reports as "no such overload", as cel-go does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Context, Decimal
from typing import Any

from celpy import celtypes

from kube_rdma.core.quantity import QuantityError, parse_quantity

_INT64 = 2**63
# Semantic Versioning 2.0.0, as github.com/blang/semver/v4 Parse accepts it.
_NUMBER = r"(?:0|[1-9][0-9]*)"
_IDENT = r"[0-9A-Za-z-]+"
_SEMVER = re.compile(
    rf"^({_NUMBER})\.({_NUMBER})\.({_NUMBER})"
    rf"(?:-({_IDENT}(?:\.{_IDENT})*))?(?:\+({_IDENT}(?:\.{_IDENT})*))?$"
)
_LEADING_ZERO = re.compile(r"^0[0-9]+$")


class Semver:
    """A semantic version; equal when neither precedes the other (build metadata ignored)."""

    __slots__ = ("major", "minor", "patch", "pre", "text")

    def __init__(self, text: str) -> None:
        text = str(text)
        match = _SEMVER.match(text)
        pre = match.group(4).split(".") if match and match.group(4) else []
        if match is None or any(_LEADING_ZERO.match(p) for p in pre):
            raise ValueError(f"{text!r} is not a semantic version (e.g. 1.2.3)")
        self.text = text
        self.major, self.minor, self.patch = (int(match.group(i)) for i in (1, 2, 3))
        self.pre = tuple(pre)

    def compare(self, other: Semver) -> int:
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return 1 if mine > theirs else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            if a != b:
                return 1 if _pre_key(a) > _pre_key(b) else -1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


def _pre_key(identifier: str) -> tuple[int, int, str]:
    """Numeric identifiers sort before alphanumeric ones, numerically (semver.org item 11)."""
    return (0, int(identifier), "") if identifier.isdigit() else (1, 0, identifier)


def normalized_semver(text: str) -> Semver:
    """semverlib.go normalizeAndParse: no `v` prefix, missing minor and patch filled with 0,
    leading zeros removed."""
    parts = [_without_leading_zeros(p) for p in text.removeprefix("v").split(".", 2)]
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError(f"{text!r}: a short version cannot carry pre-release or build data")
        parts += ["0"] * (3 - len(parts))
    return Semver(".".join(parts))


def _without_leading_zeros(part: str) -> str:
    if len(part) <= 1:
        return part
    stripped = part.lstrip("0")
    return stripped if stripped[:1].isdigit() else "0" + stripped


class Quantity:
    """A resource quantity; equal when the amounts are (`1Gi` == `1024Mi`)."""

    __slots__ = ("amount",)

    def __init__(self, amount: Decimal) -> None:
        self.amount = amount

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.amount == other.amount

    def __hash__(self) -> int:
        return hash(self.amount)

    def __repr__(self) -> str:
        return f"quantity({self.amount})"


def _quantity(text: Any) -> Quantity:
    try:
        return Quantity(parse_quantity(str(_string(text))))
    except QuantityError as e:
        raise ValueError(str(e)) from e


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _semver(text: Any, normalize: Any = False) -> Semver:
    if not isinstance(normalize, bool | celtypes.BoolType):
        raise TypeError("semver's second argument is a bool")
    return normalized_semver(_string(text)) if normalize else Semver(_string(text))


def _is(parse: Callable[..., Any]) -> Callable[..., celtypes.BoolType]:
    def test(*args: Any) -> celtypes.BoolType:
        try:
            parse(*args)
        except ValueError:
            return celtypes.BoolType(False)
        return celtypes.BoolType(True)

    return test


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.amount > b.amount) - (a.amount < b.amount)
    raise TypeError(f"cannot compare {type(a).__name__} with {type(b).__name__}")


def _version_part(index: int) -> Callable[[Any], celtypes.IntType]:
    def part(version: Any) -> celtypes.IntType:
        if not isinstance(version, Semver):
            raise TypeError(f"not a semver: {type(version).__name__}")
        return celtypes.IntType((version.major, version.minor, version.patch)[index])

    return part


def _receiver(value: Any) -> Decimal:
    if not isinstance(value, Quantity):
        raise TypeError(f"not a quantity: {type(value).__name__}")
    return value.amount


def _amount(value: Any) -> Decimal:
    if isinstance(value, Quantity):
        return value.amount
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    raise TypeError(f"not a quantity or int: {type(value).__name__}")


def _as_integer(q: Any) -> celtypes.IntType:
    amount = _receiver(q)
    if amount != amount.to_integral_value() or not -_INT64 <= amount < _INT64:
        raise ValueError(f"{amount} is not an integer within int64")
    return celtypes.IntType(int(amount))


def _is_integer(q: Any) -> celtypes.BoolType:
    return _is(_as_integer)(q)


_EXACT = Context(prec=100)
"""Quantities are exact (resource.Quantity is an int64 or an inf.Dec): Decimal's default 28
digits would round `quantity("9999999999999999999999999999999999999").add(quantity("1"))`
(the quantity tests' add_does_not_mutate_receiver, k8s.io/apiserver master)."""

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "semver": _semver,
    "isSemver": _is(_semver),
    "major": _version_part(0),
    "minor": _version_part(1),
    "patch": _version_part(2),
    "quantity": _quantity,
    "isQuantity": _is(_quantity),
    "compareTo": lambda a, b: celtypes.IntType(_compare(a, b)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_compare(a, b) == 1),
    "isLessThan": lambda a, b: celtypes.BoolType(_compare(a, b) == -1),
    "sign": lambda q: celtypes.IntType((_receiver(q) > 0) - (_receiver(q) < 0)),
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: celtypes.DoubleType(float(_receiver(q))),
    "add": lambda q, other: Quantity(_EXACT.add(_receiver(q), _amount(other))),
    "sub": lambda q, other: Quantity(_EXACT.subtract(_receiver(q), _amount(other))),
}
"""Extension functions by name, for celpy's `program(..., functions=FUNCTIONS)`."""
