"""What cel-go lets a macro (`exists`, `all`, `exists_one`, `map`, `filter`) range over: a list
or a map only. cel-python iterates a string's characters, so `"fish".exists(x, x == "fish")`
would be false where Kubernetes refuses it:

- a literal that is no list or map does not compile (cel-go checker/checker.go
  checkComprehension: "expression of type 'string' cannot be range of a comprehension (must
  be list, map, or dynamic)");
- a value known only at run time (an attribute, which the DRA environment types as dynamic)
  fails to evaluate ("got 'types.String', expected iterable type", the DRA CEL tests'
  macro-exists-on-string, k8s.io/dynamic-resource-allocation cel/compile_test.go from
  release-1.36).

Parsed expressions are rewritten so that a macro's range passes through `__iterable`, which
raises for anything else.
"""

from __future__ import annotations

from typing import Any

import celpy
import lark
from celpy import celtypes

from kube_rdma.core.dra.cellib import Quantity, Semver

MACROS = frozenset({"exists", "all", "exists_one", "map", "filter"})
_LITERAL_TYPES = {
    "STRING_LIT": "string",
    "MLSTRING_LIT": "string",
    "BYTES_LIT": "bytes",
    "INT_LIT": "int",
    "UINT_LIT": "uint",
    "FLOAT_LIT": "double",
    "BOOL_LIT": "bool",
    "NULL_LIT": "null_type",
}
_GO_TYPES: tuple[tuple[type, str], ...] = (
    (celtypes.BoolType, "types.Bool"),
    (celtypes.IntType, "types.Int"),
    (celtypes.UintType, "types.Uint"),
    (celtypes.DoubleType, "types.Double"),
    (celtypes.StringType, "types.String"),
    (celtypes.BytesType, "types.Bytes"),
    (Semver, "cel.Semver"),
    (Quantity, "cel.Quantity"),
)
GUARD = "__iterable"


def iterable(value: Any) -> Any:
    if isinstance(value, celtypes.ListType | celtypes.MapType):
        return value
    name = next((n for t, n in _GO_TYPES if isinstance(value, t)), type(value).__name__)
    raise TypeError(f"got '{name}', expected iterable type")


def guard_ranges(tree: lark.Tree[Any], environment: celpy.Environment) -> lark.Tree[Any]:
    """Raises ValueError for a macro over a literal that is no list or map; else wraps each
    macro's range in `__iterable(...)`, in place."""
    for node in list(tree.iter_subtrees()):
        if node.data != "member_dot_arg" or str(node.children[1]) not in MACROS:
            continue
        target = node.children[0]
        kind = _literal_type(target)
        if kind is not None:
            raise ValueError(
                f"expression of type '{kind}' cannot be range of a comprehension "
                "(must be list, map, or dynamic)"
            )
        wrapper = _member(environment.compile(f"{GUARD}(__range)"))
        _put(wrapper, target)
        node.children[0] = wrapper
    return tree


def _literal_type(node: Any) -> str | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data in ("list_lit", "map_lit"):
            return None
        node = node.children[0]
    return _LITERAL_TYPES.get(getattr(node, "type", ""))


def _member(tree: lark.Tree[Any]) -> lark.Tree[Any]:
    node = tree
    while node.data != "member":
        child = node.children[0]
        assert isinstance(child, lark.Tree)
        node = child
    return node


def _put(tree: lark.Tree[Any], target: Any) -> bool:
    """Replaces the `__range` placeholder's expression in `tree` with `target`."""
    for index, child in enumerate(tree.children):
        if not isinstance(child, lark.Tree):
            continue
        if child.data == "expr" and _is_placeholder(child):
            tree.children[index] = target
            return True
        if _put(child, target):
            return True
    return False


def _is_placeholder(node: Any) -> bool:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    return isinstance(node, lark.Token) and str(node) == "__range"
