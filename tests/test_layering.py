"""Import contracts: certs/ imports nothing of ours; extender/ may import certs/ only;
webhook/ may import both. So the shared pieces live once, below their users."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {"certs": set(), "extender": {"certs"}, "webhook": {"certs", "extender"}}


def _imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_sits_below_it(package: str) -> None:
    for path in sorted((ROOT / package).rglob("*.py")):
        wrong = _imported_packages(path) - ALLOWED[package] - {package}
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_every_key_of_ours_has_the_prefix() -> None:
    from kube_rdma.core import keys

    assert all(key.startswith("kube-rdma.io/") for key in keys.ALL)
