"""`cel.bind(name, value, expression)` for cel-python, which lacks it.

The DRA CEL environment loads cel-go's bindings extension (k8s.io/dynamic-resource-allocation/
cel, compile.go: `ext.Bindings`), so that a selector names a domain's attributes once:
`cel.bind(gpu, device.attributes["gpu.nvidia.com"], gpu.type == "gpu" && gpu.index < 4)`.
The macro binds `name` to `value` while `expression` is evaluated; `[value].map(name,
expression)[0]` does the same with a macro cel-python has, so parsed expressions are rewritten
to that form before they are run.
"""

from __future__ import annotations

from typing import Any

import celpy
import lark

_TEMPLATE = "[__value].map(__name, __body)[0]"


class BindError(ValueError):
    """A `cel.bind` whose first argument is not a plain name, or with other than 3 arguments."""


def rewrite_bindings(tree: lark.Tree[Any], environment: celpy.Environment) -> lark.Tree[Any]:
    """The parsed expression with every `cel.bind(...)` in the `map` form, inner ones first."""
    for index, child in enumerate(tree.children):
        if isinstance(child, lark.Tree):
            tree.children[index] = rewrite_bindings(child, environment)
    if tree.data != "member" or not _is_bind(tree.children[0]):
        return tree
    name, value, body = _arguments(tree.children[0])
    template = environment.compile(_TEMPLATE)
    replacements = {"__value": value, "__name": name, "__body": body}
    return _substitute(_first(template, "member"), replacements)


def _is_bind(node: Any) -> bool:
    if not isinstance(node, lark.Tree) or node.data != "member_dot_arg":
        return False
    target, method = node.children[0], node.children[1]
    return str(method) == "bind" and _plain_name(target) == "cel"


def _arguments(call: lark.Tree[Any]) -> tuple[lark.Tree[Any], ...]:
    arguments = call.children[2] if len(call.children) > 2 else None
    expressions = list(arguments.children) if isinstance(arguments, lark.Tree) else []
    if len(expressions) != 3 or _plain_name(expressions[0]) is None:
        raise BindError("cel.bind takes a name, a value and an expression")
    return tuple(expressions)


def _plain_name(node: Any) -> str | None:
    """The identifier an expression consists of, or None."""
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Token) and node.type == "IDENT":
        return str(node)
    return None


def _first(tree: lark.Tree[Any], data: str) -> lark.Tree[Any]:
    """The first node of `data` going down the first children (the template's outer one)."""
    node = tree
    while node.data != data:
        child = node.children[0]
        assert isinstance(child, lark.Tree)
        node = child
    return node


def _substitute(tree: lark.Tree[Any], replacements: dict[str, lark.Tree[Any]]) -> lark.Tree[Any]:
    for index, child in enumerate(tree.children):
        if not isinstance(child, lark.Tree):
            continue
        name = _plain_name(child) if child.data == "expr" else None
        if name in replacements:
            tree.children[index] = replacements[name]
        else:
            _substitute(child, replacements)
    return tree
