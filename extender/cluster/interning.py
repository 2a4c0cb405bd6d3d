"""One object for what many nodes' topology documents hold alike.

A decoded topology document is most of what the extender keeps per node, and nodes of one board
hold the same GPUs, PCIe links, GPU-NIC pairs, NIC names and port states: only their addresses,
GIDs and counters are their own. `Shared.topology` rebuilds a freshly decoded document from the
bottom up so that every part equal in full to one already held (every field, and which fields
the document set) is that one object: nodes of one shape share their GPUs and pairs, and a node's
GIDs stay its own because no other node's are equal to them. Nothing is shared by a label or a
name: the key of a part is its whole content, so a node whose document changes gets new parts
for what changed and leaves every other node's untouched.

A part holding a string or number never seen before is not kept in the table (nothing held can
be equal to it): the table holds what nodes share, and the strings, not a second index of every
node's addresses. Parts no node holds any more (documents change: counters, a link that trained
down) are dropped once the table has doubled. The parts are frozen models, tuples and strings;
the counters' dicts are shared too and must be read only, as everything the cluster model hands
out is.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from kube_rdma.core.topology import Topology

PRUNE_FLOOR = 65536
"""Parts held before the first pruning."""


class Shared:
    """The table of parts held: content key -> the one object."""

    def __init__(self) -> None:
        self._parts: dict[Any, Any] = {}
        self._pruned_at = 0

    def __len__(self) -> int:
        return len(self._parts)

    def topology(self, topology: Topology) -> Topology:
        """`topology`, or the equal one already held, its parts shared likewise. The argument
        must be freshly decoded (held by nobody else): its parts are replaced in place."""
        if len(self._parts) >= 2 * self._pruned_at + PRUNE_FLOOR:
            self.prune()
        found: Topology = self._part(topology)[0]
        return found

    def prune(self) -> None:
        """Drop the parts that nothing but the table holds (CPython's reference counts), until
        none is left: a part dropped may have held the last reference to another."""
        while self._drop_unheld():
            pass
        self._pruned_at = len(self._parts)

    def _drop_unheld(self) -> int:
        # A string or number stands for itself in its parents' keys: references the table holds.
        in_keys = Counter(
            id(v) for key in self._parts if type(key) is tuple for v in key if _scalar(v)
        )
        unheld = []
        for key in list(self._parts):
            value = self._parts[key]
            itself = key is value
            # The table's references: its slot, the keys naming it, and its key when it is
            # its own; this loop's: getrefcount's argument, `value`, and (when the same) the
            # list of keys and `key`.
            table = 1 + in_keys[id(value)] + 3 * itself
            if sys.getrefcount(value) - 2 <= table:
                unheld.append(key)
        for key in unheld:
            del self._parts[key]
        return len(unheld)

    def _part(self, value: Any) -> tuple[Any, bool]:
        """The shared part equal to `value`, and whether it holds something never seen
        before (then it is not kept: no part held can be equal to it)."""
        kind = type(value)
        parts = self._parts
        if kind is str or (kind is float and value == value):  # NaN equals nothing
            found = parts.get(value)
            if found is None:
                parts[value] = value
                return value, True
            return found, False
        if kind is tuple:
            items, new = self._all(value)
            if new:
                return tuple(items), True
            key = (tuple, *[v if type(v) in _SCALARS else id(v) for v in items])
            found = parts.get(key)
            if found is None:
                found = parts[key] = tuple(items)
            return found, False
        if kind is dict:
            names, new_names = self._all(value)
            values, new_values = self._all(value.values())
            if new_names or new_values:
                return dict(zip(names, values, strict=True)), True
            key = (dict, *names, *[v if type(v) in _SCALARS else id(v) for v in values])
            found = parts.get(key)
            if found is None:
                found = parts[key] = dict(zip(names, values, strict=True))
            return found, False
        if isinstance(value, BaseModel):
            fields = value.__dict__
            values, new = self._all(fields.values())
            for name, part in zip(fields, values, strict=True):
                fields[name] = part
            # Which fields the document set: a set per object unless shared (never changed,
            # the models being frozen).
            which = value.model_fields_set
            which_key = (set, kind, *sorted(which))
            which = parts.setdefault(which_key, which)
            object.__setattr__(value, "__pydantic_fields_set__", which)
            if new:
                return value, True
            key = (kind, id(which), *[v if type(v) in _SCALARS else id(v) for v in values])
            return parts.setdefault(key, value), False
        return value, False

    def _all(self, values: Iterable[Any]) -> tuple[list[Any], bool]:
        shared, new = [], False
        parts, part = self._parts, self._part
        for value in values:
            kind = type(value)
            if kind is str or (kind is float and value == value):
                found = parts.get(value)
                if found is None:
                    parts[value] = found = value
                    new = True
                shared.append(found)
            elif kind in _SCALARS:
                shared.append(value)
            else:
                found, fresh = part(value)
                shared.append(found)
                new = new or fresh
        return shared, new


_SCALARS = frozenset({str, float, int, bool, type(None)})
"""What stands for itself in a key. Any other part (a tuple, a dict, a model; an enum member)
stands for its identity: the table holds it, so the number is not reused while the key is
there. A field's scalars are all of one type once validated (a float field holds floats), so 1,
1.0 and True never meet in one place of a key."""


def _scalar(value: Any) -> bool:
    return type(value) is str or type(value) is float
