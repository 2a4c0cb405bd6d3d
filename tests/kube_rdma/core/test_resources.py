"""The one definition of an RDMA resource: what the defaults match, and pattern validation."""

from __future__ import annotations

import pytest

from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS, is_rdma, pattern_error

MATCHES = [
    ("rdma/hca", True),
    ("rdma/hca_shared_devices_a", True),
    ("rdma/rdma_shared_device_a", True),
    ("rdma.nvidia.com/hca", True),
    ("nvidia.com/sriov_rdma_vf", True),
    ("spidernet.io/hca_shared_devices", True),
    ("nvidia.com/hostdev", True),
    ("nvidia.com/mlnxics", True),
    ("nvidia.com/mlnxnics", True),
    ("nvidia.com/sriov_resource", True),
    ("intel.com/sriov_netdevice", False),
    ("nvidia.com/sriov_net", False),
    ("nvidia.com/gpu", False),
    ("example.com/nic-hca", False),
    ("cpu", False),
]


@pytest.mark.parametrize(("resource", "expected"), MATCHES, ids=[m[0] for m in MATCHES])
def test_default_patterns(resource: str, expected: bool) -> None:
    assert is_rdma(resource) is expected


def test_explicit_patterns_replace_the_defaults() -> None:
    assert is_rdma("example.com/fabric", ["example.com/*"]) is True
    assert is_rdma("rdma/hca", ["example.com/*"]) is False


ERRORS = [
    ("rdma/*", None),
    ("*rdma*", None),
    ("nvidia.com/sriov_rdma_vf", None),
    ("hca", "'hca' is not an extended resource name (domain/name)"),
    (
        "a/b/c",
        "'a/b/c' is not a resource pattern (domain/name, letters, digits, '-', '_', '.', with "
        "'*' as a wildcard)",
    ),
    (
        "rdma/[a-z]",
        "'rdma/[a-z]' is not a resource pattern (domain/name, letters, digits, '-', '_', '.', "
        "with '*' as a wildcard)",
    ),
]


@pytest.mark.parametrize(("pattern", "error"), ERRORS, ids=[e[0] for e in ERRORS])
def test_pattern_validation(pattern: str, error: str | None) -> None:
    assert pattern_error(pattern) == error


def test_defaults_are_valid() -> None:
    assert [pattern_error(p) for p in DEFAULT_RDMA_PATTERNS] == [None] * len(DEFAULT_RDMA_PATTERNS)
