"""The DRA CEL environment's upstream tests (cel_cases.py), each judged by kube-rdma's
Selectors on the device the case describes, for each version kube-rdma supports:
`test_case[<version>-<case>]`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kube_rdma.core.dra.selectors import SelectorError, Selectors
from kube_rdma.core.dra.shapes import Device, Version, qualified
from kube_rdma.core.quantity import parse_quantity
from tests.kube_rdma.core.dra.upstream.builders import LeftOut
from tests.kube_rdma.core.dra.upstream.cel_cases import (
    COMPILE,
    EVALUATE,
    MATCH,
    NO_MATCH,
    CelCase,
    cel_case,
)

NAMES = json.loads((Path(__file__).parent / "cel_names.json").read_text())
ENTRIES = [(version, name) for version, found in NAMES.items() for name in found["names"]]


def device(case: CelCase) -> Device:
    attributes = {}
    for name, wrapped in case.attributes.items():
        [(kind, value)] = wrapped.items()
        attributes[qualified(case.driver, name)] = Version(value) if kind == "version" else value
    capacity = {qualified(case.driver, n): int(parse_quantity(v)) for n, v in case.capacity.items()}
    return Device(case.driver, "pool", "device", attributes, capacity)


def judged(case: CelCase) -> str:
    selectors = Selectors()
    try:
        selectors.check(case.expression)
    except SelectorError:
        return COMPILE
    outcome = selectors.judge([case.expression], device(case))
    if isinstance(outcome, str):
        return EVALUATE
    return MATCH if outcome else NO_MATCH


@pytest.mark.parametrize(("version", "name"), ENTRIES, ids=[f"{v}-{n}" for v, n in ENTRIES])
def test_case(version: str, name: str) -> None:
    entry = cel_case(name)
    if entry is None:
        pytest.fail(f"{NAMES[version]['file']}@{version}: case {name!r} is not translated")
    if isinstance(entry, LeftOut):
        assert entry.why.strip(), "a case left out says why, in one line"
        return  # accounted for: not run, with its reason
    assert judged(entry) == entry.expect
