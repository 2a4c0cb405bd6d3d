"""RFC 6902 JSON patches computed from the request object and the mutated object.

As controller-runtime does, the mutation edits a copy and the patch is derived by diffing, so
the patch always describes exactly what changed. The diff is shaped for what a mutating webhook
does: lists are compared item by item and what was appended becomes `add .../-`, so the patch
touches only the fields that changed; a list that shrank is replaced whole.
"""

from __future__ import annotations

from typing import Any

Json = Any
Operation = dict[str, Any]


def escape(token: str) -> str:
    """A JSON-pointer reference token: `~` becomes `~0`, `/` becomes `~1` (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def diff(old: Json, new: Json, path: str = "") -> list[Operation]:
    """Operations that turn `old` into `new`."""
    if isinstance(old, dict) and isinstance(new, dict):
        return _diff_dicts(old, new, path)
    if isinstance(old, list) and isinstance(new, list):
        return _diff_lists(old, new, path)
    if old == new and type(old) is type(new):
        return []
    return [{"op": "replace", "path": path, "value": new}]


def _same(old: Json, new: Json) -> bool:
    """Equal and of the same type: one comparison in C settles a whole unchanged subtree, with
    no path built for it (most of a pod is left as it was). Inside containers 1 and True
    compare equal; the pod comes from Go structs, so no field changes type that way."""
    return old == new and type(old) is type(new)


def _diff_dicts(old: dict[str, Json], new: dict[str, Json], path: str) -> list[Operation]:
    ops: list[Operation] = []
    for key, value in old.items():
        if key not in new:
            ops.append({"op": "remove", "path": f"{path}/{escape(key)}"})
        elif not _same(value, new[key]):
            ops.extend(diff(value, new[key], f"{path}/{escape(key)}"))
    for key, value in new.items():
        if key not in old:
            ops.append({"op": "add", "path": f"{path}/{escape(key)}", "value": value})
    return ops


def _diff_lists(old: list[Json], new: list[Json], path: str) -> list[Operation]:
    if len(new) < len(old):
        return [{"op": "replace", "path": path, "value": new}]
    ops: list[Operation] = []
    for index, (before, after) in enumerate(zip(old, new, strict=False)):
        if not _same(before, after):
            ops.extend(diff(before, after, f"{path}/{index}"))
    ops.extend({"op": "add", "path": f"{path}/-", "value": v} for v in new[len(old) :])
    return ops
