"""The semver and quantity libraries' upstream tests (library_cases.py), evaluated in
kube-rdma's CEL environment (the one its Selectors compile selectors in), for each version:
`test_case[<library>-<version>-<case>]`."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from celpy import celtypes
from celpy.evaluation import CELEvalError

from kube_rdma.core.dra.cellib import Quantity, Semver
from kube_rdma.core.dra.selectors import SelectorError, Selectors
from kube_rdma.core.quantity import parse_quantity
from tests.kube_rdma.core.dra.upstream.builders import LeftOut
from tests.kube_rdma.core.dra.upstream.library_cases import (
    COMPILE,
    QUANTITY,
    RUNTIME,
    SEMVER,
    LibraryCase,
    Typed,
)

HERE = Path(__file__).parent
LIBRARIES = {"semver": SEMVER, "quantity": QUANTITY}
ENTRIES = [
    (library, version, name)
    for library in LIBRARIES
    for version, found in json.loads((HERE / f"{library}_names.json").read_text()).items()
    for name in found["names"]
]
SELECTORS = Selectors()


def evaluated(expression: str) -> Any:
    """The expression's value, RUNTIME or COMPILE; compiled as the selectors are (the
    environment, its libraries and rewrites are Selectors'), then run on no device."""
    try:
        SELECTORS.check(expression)
    except SelectorError:
        return COMPILE
    try:
        value = SELECTORS._compile(expression).program.evaluate({})
    except (CELEvalError, ValueError, TypeError, ArithmeticError):
        return RUNTIME
    return RUNTIME if isinstance(value, CELEvalError) else value


def expected_value(expect: Any) -> Any:
    if isinstance(expect, Typed):
        if expect.kind == "semver":
            return Semver(expect.text)
        return Quantity(Decimal(parse_quantity(expect.text)))
    if isinstance(expect, bool):
        return celtypes.BoolType(expect)
    if isinstance(expect, int):
        return celtypes.IntType(expect)
    if isinstance(expect, float):
        return celtypes.DoubleType(expect)
    return expect


@pytest.mark.parametrize(
    ("library", "version", "name"), ENTRIES, ids=[f"{lib}-{v}-{n}" for lib, v, n in ENTRIES]
)
def test_case(library: str, version: str, name: str) -> None:
    entry = LIBRARIES[library].get(name)
    if entry is None:
        pytest.fail(f"pkg/cel/library/{library}_test.go@{version}: {name!r} is not translated")
    if isinstance(entry, LeftOut):
        assert entry.why.strip(), "a case left out says why, in one line"
        return  # accounted for: not run, with its reason
    assert isinstance(entry, LibraryCase)
    got = evaluated(entry.expression)
    want = expected_value(entry.expect)
    if isinstance(want, str):
        assert got == want
    else:
        assert type(got) is type(want)
        assert got == want
