"""CEL selectors of DeviceClasses and requests, evaluated with cel-python against a device as
kube-scheduler's allocator presents it (k8s.io/dynamic-resource-allocation/cel, compile.go):
`device.driver`; `device.attributes[domain][id]`, a `version` attribute as a semver value;
`device.capacity[domain][id]`, each a quantity; `device.allowMultipleAllocations`; a domain the
device lacks reads as an empty map. The semver and quantity libraries of the Kubernetes CEL
environment are registered (kube_rdma/core/dra/cellib.py).

An evaluation costs about 0.4 ms, and a cluster of 5,000 nodes publishes tens of thousands of
devices, so outcomes are remembered per (expression, the part of the device the expression can
see): the driver and the attributes whose domain and name both appear in the expression's text.
An expression that walks a whole map (`exists`, `all`, `size`, ...) sees every attribute and is
remembered per whole device.

An evaluation error (an attribute the device lacks, unguarded by `has`; a result that is not a
bool) is an outcome of its own, with its message: the allocator fails the claim when its search
reaches such a device, and kube_rdma/core/dra/search.py does the same. Of the strings library,
split, join, lowerAscii, upperAscii, trim, replace, indexOf and lastIndexOf are evaluated
(kube_rdma/core/dra/celstrings.py). Not evaluated: the rest of the Kubernetes environment's
libraries (the rest of strings, lists, sets, URLs, IP and CIDR, format, two-variable
comprehensions, optional values) and its comparisons across int and double (`index < 2.5`);
an expression using them fails to evaluate (optional syntax, `?.`, to compile). A macro
ranges over a list or map only, as in cel-go (kube_rdma/core/dra/celranges.py).
`cel.bind` is rewritten into a form cel-python runs (kube_rdma/core/dra/celbind.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from kube_rdma.core.dra.celbind import rewrite_bindings
from kube_rdma.core.dra.cellib import FUNCTIONS, Quantity, Semver
from kube_rdma.core.dra.celranges import GUARD, guard_ranges, iterable
from kube_rdma.core.dra.celstrings import STRING_FUNCTIONS
from kube_rdma.core.dra.shapes import AttributeValue, Device, Version

_FUNCTIONS = {**FUNCTIONS, **STRING_FUNCTIONS, GUARD: iterable}
_STRINGS = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')
_IDENTIFIERS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WHOLE_MAP = frozenset({"exists", "all", "exists_one", "map", "filter", "size"})
_MEMORY_LIMIT = 200_000


Outcome = bool | str
"""Whether a device matches, or why the expression failed to evaluate on it."""


class SelectorError(ValueError):
    """A CEL expression that does not compile."""


@dataclass(frozen=True)
class _Compiled:
    program: Any
    tokens: frozenset[str]
    whole: bool
    visible: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    """A device's attribute or capacity names -> those the expression can see, sorted."""


class Selectors:
    """Compiled expressions and remembered results. One per process; not thread-safe."""

    def __init__(self) -> None:
        self._environment = celpy.Environment()
        self._compiled: dict[str, _Compiled] = {}
        self._results: dict[tuple[str, Any], Outcome] = {}

    def check(self, expression: str) -> None:
        """Raises SelectorError naming the expression when it does not compile."""
        self._compile(expression)

    def matches(self, expressions: Iterable[str], device: Device) -> bool:
        """True when every expression matches; an evaluation error counts as no match."""
        return self.judge(expressions, device) is True

    def judge(self, expressions: Iterable[str], device: Device) -> Outcome:
        """True when every expression matches, else the first non-match (False) or evaluation
        error (its message), in order: the allocator stops at the first of either."""
        for expression in expressions:
            outcome = self._outcome(expression, device)
            if isinstance(outcome, str):
                return f"CEL selector {expression!r} fails: {outcome}"
            if not outcome:
                return False
        return True

    def _outcome(self, expression: str, device: Device) -> Outcome:
        compiled = self._compile(expression)
        key = (expression, _projection(device, compiled))
        found = self._results.get(key)
        if found is None:
            if len(self._results) >= _MEMORY_LIMIT:
                self._results.clear()
            found = self._results[key] = _evaluate(compiled.program, device)
        return found

    def _compile(self, expression: str) -> _Compiled:
        compiled = self._compiled.get(expression)
        if compiled is None:
            try:
                parsed = rewrite_bindings(self._environment.compile(expression), self._environment)
                program = self._environment.program(
                    guard_ranges(parsed, self._environment), functions=_FUNCTIONS
                )
            except Exception as e:  # celpy raises its own parse errors, and Lark's
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise SelectorError(f"CEL selector {expression!r} does not compile: {first}") from e
            strings = {a or b for a, b in _STRINGS.findall(expression)}
            identifiers = set(_IDENTIFIERS.findall(_STRINGS.sub(" ", expression)))
            compiled = _Compiled(
                program, frozenset(strings | identifiers), bool(identifiers & _WHOLE_MAP)
            )
            self._compiled[expression] = compiled
        return compiled


def _projection(device: Device, compiled: _Compiled) -> Any:
    if compiled.whole:
        return (
            device.driver,
            tuple(sorted(device.attributes.items())),
            _items(device.capacity),
            device.multi,
        )
    attributes, capacity = device.attributes, device.capacity
    return (
        device.driver,
        tuple((n, attributes[n]) for n in _visible(compiled, tuple(attributes))),
        tuple((n, capacity[n]) for n in _visible(compiled, tuple(capacity))),
        device.multi,
    )


def _visible(compiled: _Compiled, names: tuple[str, ...]) -> tuple[str, ...]:
    """The names whose domain and identifier both appear in the expression's text; remembered
    per set of names, which the devices of one driver share."""
    found = compiled.visible.get(names)
    if found is None:
        seen = compiled.tokens
        found = compiled.visible[names] = tuple(
            sorted(n for n in names if {n.rpartition("/")[0], n.rpartition("/")[2]} <= seen)
        )
    return found


def _items(amounts: Any) -> tuple[Any, ...]:
    return tuple(sorted(amounts.items()))


def _evaluate(program: Any, device: Device) -> Outcome:
    try:
        result = program.evaluate({"device": _activation(device)})
    except CELEvalError as e:
        return _describe(e)
    except Exception as e:  # cel-python raises its own errors from inside extension calls too
        return f"{type(e).__name__}: {e}"
    if isinstance(result, celtypes.BoolType | bool):
        return bool(result)
    return f"the result is a {type(result).__name__}, not a bool"


def _describe(error: CELEvalError) -> str:
    """cel-python's message for an error, without its dump of the activation and with class
    names short; an extension function's ValueError (`semver('x')`) by its own message."""
    args = error.args
    details = args[2] if len(args) > 2 and isinstance(args[2], tuple) else ()
    if len(args) > 1 and args[1] is ValueError and details:
        message = ", ".join(str(d) for d in details)
    else:
        message = str(args[0]) if args else "evaluation failed"
        message = message.split(" (in activation", 1)[0]
        if details:
            message += ": " + ", ".join(str(d) for d in details)
    return _CLASS.sub(r"\1", message)


_CLASS = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")


class _DefaultingMap(celtypes.MapType):
    """A map whose missing keys read as an empty map, as compile.go's `mapper` makes
    `device.attributes` and `device.capacity`."""

    def __missing__(self, key: Any) -> celtypes.MapType:
        return celtypes.MapType()


def _activation(device: Device) -> celtypes.MapType:
    attributes = {n: _attribute(n, v) for n, v in device.attributes.items()}
    capacity = {n: Quantity(Decimal(v)) for n, v in device.capacity.items()}
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(device.driver),
            celtypes.StringType("attributes"): _by_domain(attributes),
            celtypes.StringType("capacity"): _by_domain(capacity),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(device.multi),
        }
    )


def _attribute(name: str, value: AttributeValue) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, Version):
        try:
            return Semver(value)
        except ValueError as e:
            raise CELEvalError(f"attribute {name}: {e}") from e
    return celtypes.StringType(value)


def _by_domain(values: dict[str, Any]) -> _DefaultingMap:
    nested: dict[str, dict[Any, Any]] = {}
    for name, value in values.items():
        domain, _, ident = name.rpartition("/")
        nested.setdefault(domain, {})[celtypes.StringType(ident)] = value
    return _DefaultingMap(
        {celtypes.StringType(d): celtypes.MapType(inner) for d, inner in nested.items()}
    )
