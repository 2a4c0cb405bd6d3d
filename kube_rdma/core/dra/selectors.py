"""CEL selectors of DeviceClasses and requests, evaluated with cel-python against a device as
kube-scheduler's allocator presents it: `device.driver`, `device.attributes[domain][id]` and
`device.capacity[domain][id]` (k8s.io/dynamic-resource-allocation/cel, compile.go).

An evaluation costs about 0.4 ms, and a cluster of 5,000 nodes publishes tens of thousands of
devices, so results are remembered per (expression, the part of the device the expression can
see): the driver and the attributes whose domain and name both appear in the expression's text.
An expression that walks a whole map (`exists`, `all`, `size`, ...) sees every attribute and is
remembered per whole device.

Differences from kube-scheduler: an evaluation error (an attribute the device lacks, unguarded
by `has`) makes the device not match, where the allocator fails the claim; versions are
strings and capacities integers, so `semver(...)` and `quantity(...)` comparisons do not
evaluate (and match nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from kube_rdma.core.dra.shapes import Device

_STRINGS = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')
_IDENTIFIERS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WHOLE_MAP = frozenset({"exists", "all", "exists_one", "map", "filter", "size"})
_MEMORY_LIMIT = 200_000


class SelectorError(ValueError):
    """A CEL expression that does not compile."""


@dataclass(frozen=True)
class _Compiled:
    program: Any
    tokens: frozenset[str]
    whole: bool


class Selectors:
    """Compiled expressions and remembered results. One per process; not thread-safe."""

    def __init__(self) -> None:
        self._environment = celpy.Environment()
        self._compiled: dict[str, _Compiled] = {}
        self._results: dict[tuple[str, Any], bool] = {}

    def check(self, expression: str) -> None:
        """Raises SelectorError naming the expression when it does not compile."""
        self._compile(expression)

    def matches(self, expressions: Iterable[str], device: Device) -> bool:
        return all(self._match(e, device) for e in expressions)

    def _match(self, expression: str, device: Device) -> bool:
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
                program = self._environment.program(self._environment.compile(expression))
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
        return device.driver, tuple(sorted(device.attributes.items())), _items(device.capacity)
    seen = compiled.tokens

    def visible(name: str) -> bool:
        domain, _, ident = name.rpartition("/")
        return domain in seen and ident in seen

    return (
        device.driver,
        tuple(sorted((n, v) for n, v in device.attributes.items() if visible(n))),
        tuple(sorted((n, v) for n, v in device.capacity.items() if visible(n))),
    )


def _items(amounts: Any) -> tuple[Any, ...]:
    return tuple(sorted(amounts.items()))


def _evaluate(program: Any, device: Device) -> bool:
    try:
        result = program.evaluate({"device": json_to_cel(_activation(device))})
    except CELEvalError:
        return False
    return result is True or (isinstance(result, celpy.celtypes.BoolType) and bool(result))


def _activation(device: Device) -> dict[str, Any]:
    return {
        "driver": device.driver,
        "attributes": _by_domain(device.attributes),
        "capacity": _by_domain(device.capacity),
    }


def _by_domain(values: Any) -> dict[str, dict[str, Any]]:
    nested: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        domain, _, ident = name.rpartition("/")
        nested.setdefault(domain, {})[ident] = value
    return nested
