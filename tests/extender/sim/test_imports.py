"""extender/sim is product code (`kube-rdma simulate` runs it): it imports the standard library,
aiohttp, orjson, kube-rdma's core and the extender's wire names, never test tooling."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SIM = Path(__file__).resolve().parents[3] / "extender" / "sim"
ALLOWED = ("aiohttp", "orjson", "kube_rdma.core", "extender.protocol", "extender.sim")


def imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def allowed(module: str) -> bool:
    top = module.split(".")[0]
    ours = any(module == a or module.startswith(a + ".") for a in ALLOWED)
    return ours or top in sys.stdlib_module_names or top == "__future__"


def test_the_emulator_imports_no_test_tooling() -> None:
    wrong = {
        f"{path.name}: {module}"
        for path in sorted(SIM.glob("*.py"))
        for module in imported(path)
        if not allowed(module)
    }
    assert wrong == set()
