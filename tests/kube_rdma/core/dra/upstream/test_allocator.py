"""Kubernetes' allocator test table (allocator_cases.py), each case run through kube-rdma's
allocation for each version kube-rdma supports (versions.py), as its upstream file, version
and case name say: `test_case[<version>-<case>]`. A case kube-rdma leaves out is not run but
must give its reason (every test runs in CI, where a skip fails); an upstream case neither
translated nor left out fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kube_rdma.core.dra.selectors import Selectors
from tests.kube_rdma.core.dra.upstream.allocator_cases import CASES, left_out_by_prefix
from tests.kube_rdma.core.dra.upstream.builders import Case, LeftOut
from tests.kube_rdma.core.dra.upstream.harness import outcome
from tests.kube_rdma.core.dra.upstream.versions import VERSIONS

NAMES = json.loads((Path(__file__).parent / "allocator_names.json").read_text())
SELECTORS = Selectors()


def _entries() -> list[tuple[str, str]]:
    return [(version, name) for version, found in NAMES.items() for name in found["names"]]


@pytest.mark.parametrize(("version", "name"), _entries(), ids=[f"{v}-{n}" for v, n in _entries()])
def test_case(version: str, name: str) -> None:
    entry = CASES.get(name) or left_out_by_prefix(name)
    if entry is None:
        pytest.fail(f"{NAMES[version]['file']}@{version}: case {name!r} is not translated")
    if isinstance(entry, LeftOut):
        assert entry.why.strip(), "a case left out says why, in one line"
        return  # accounted for: not run, with its reason
    assert isinstance(entry, Case)
    expected = entry.by_version.get(version, entry.expect)
    if isinstance(expected, LeftOut):
        assert expected.why.strip(), "a case left out says why, in one line"
        return  # accounted for: not run, with its reason
    if isinstance(expected, Case):  # the version changed the case's objects too
        entry, expected = expected, expected.expect
    assert outcome(entry, VERSIONS[version].minor, SELECTORS) == expected


def test_the_versions_read_are_the_ones_recorded() -> None:
    assert {v: found["commit"] for v, found in NAMES.items()} == {
        v: version.commit for v, version in VERSIONS.items()
    }
