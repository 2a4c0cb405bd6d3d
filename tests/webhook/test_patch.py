"""The JSON-patch diff: exact operations for the shapes a mutation produces."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.patch import diff, escape

CASES: list[tuple[str, Any, Any, list[dict[str, Any]]]] = [
    ("equal", {"a": 1}, {"a": 1}, []),
    ("add-key", {}, {"a": {"b": 1}}, [{"op": "add", "path": "/a", "value": {"b": 1}}]),
    ("remove-key", {"a": 1}, {}, [{"op": "remove", "path": "/a"}]),
    ("replace-scalar", {"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 2}]),
    ("bool-is-not-int", {"a": 1}, {"a": True}, [{"op": "replace", "path": "/a", "value": True}]),
    (
        "escaped-keys",
        {"annotations": {}},
        {"annotations": {"kube-rdma.io/x~y": "1"}},
        [{"op": "add", "path": "/annotations/kube-rdma.io~1x~0y", "value": "1"}],
    ),
    (
        "append",
        {"env": [{"name": "A"}]},
        {"env": [{"name": "A"}, {"name": "B"}]},
        [{"op": "add", "path": "/env/-", "value": {"name": "B"}}],
    ),
    (
        "edit-in-place-and-append",
        {"c": [{"n": "a"}, {"n": "b"}]},
        {"c": [{"n": "a", "x": 1}, {"n": "b"}, {"n": "c"}]},
        [
            {"op": "add", "path": "/c/0/x", "value": 1},
            {"op": "add", "path": "/c/-", "value": {"n": "c"}},
        ],
    ),
    ("shrink-replaces", {"l": [1, 2]}, {"l": [2]}, [{"op": "replace", "path": "/l", "value": [2]}]),
    (
        "type-change",
        {"a": [1]},
        {"a": {"b": 1}},
        [{"op": "replace", "path": "/a", "value": {"b": 1}}],
    ),
]


@pytest.mark.parametrize(("old", "new", "ops"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_diff(old: Any, new: Any, ops: list[dict[str, Any]]) -> None:
    assert diff(old, new) == ops


def test_escape_order_matters() -> None:
    assert escape("a~1/b") == "a~01~1b"
