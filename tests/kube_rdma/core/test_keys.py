"""Every annotation and label key of ours carries the `kube-rdma.io/` prefix and is defined in
kube_rdma/core/keys.py, nowhere else in the product."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kube_rdma.core import keys

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("kube_rdma", "kube_rdma_cli", "webhook", "extender", "agent", "certs")


def test_every_key_of_ours_has_the_prefix() -> None:
    assert all(key.startswith(keys.PREFIX) for key in keys.ALL)
    assert len(set(keys.ALL)) == len(keys.ALL)


def _key_literals(path: Path) -> list[str]:
    """String constants that are a key of ours, as written outside keys.py."""
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith(keys.PREFIX)
    ]


@pytest.mark.parametrize("package", PRODUCT)
def test_keys_are_spelled_only_in_the_keys_module(package: str) -> None:
    keys_module = ROOT / "kube_rdma" / "core" / "keys.py"
    found = [
        literal
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != keys_module
        for literal in _key_literals(path)
    ]
    assert found == []
