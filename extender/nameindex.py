"""The node names every per-shape table is indexed by, and how a call's names are found.

At 100,000 nodes a dict of every node outgrows the CPU's caches, and a lookup then costs the
memory it reads: an index slot, an entry and the key string, each strewn over the heap, and in a
virtual machine each such read can also miss the TLB, whose refill walks two page tables. So
`Names` numbers the node names once (each node's slot, its position in every table), and for a
call of many names among 10,000 nodes or more finds them with numpy (`_Hashed`): the names
converted to rows of one array in one step, hashed, found in a sorted array of the nodes' hashes
through a directory by their top bits, and each match compared with its node's row (exact: a
name is only taken for a node whose name it is; any doubt, and the dict answers).
"""

from __future__ import annotations

from operator import itemgetter
from typing import cast

import numpy as np
import numpy.typing as npt
import orjson

from extender.cluster.model import Cluster


class Names:
    """Every node name a table has held, numbered: the tables' shared index.

    The index answers a call's names with their slots in two ways. A dict (name -> slot) is
    exact and quick while it fits the caches; at tens of thousands of nodes each lookup reads
    an entry and a key string strewn over the heap, and its cost grows with the cluster.
    `_Hashed` looks the names up in numpy arrays laid out in one piece instead, at a cost that
    does not grow with the cluster but with a fixed part (some forty numpy calls, ~0.25 ms);
    it is used for calls of `HASHED_FROM` names or more in an index of `HASHED_INDEX_FROM`
    names or more (bench/lookup.py: at 1,000 nodes the dict costs half as much, at 5,000 the
    two are even, at 20,000 the arrays cost 0.7x the dict).

    Nodes come and go; once the index holds many more names than the cluster has nodes, it is
    renumbered from the cluster, and each table rebuilds itself on its next use (`epoch`)."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}
        """Name -> slot, the position of the node's code in every table."""
        self.escaped: dict[str, str] = {}
        """Name -> its JSON string's body, for the rare name that JSON escapes."""
        self.epoch = 0
        self._hashed: _Hashed | None = None

    def slot(self, name: str) -> int:
        found = self.slots.get(name)
        if found is None:
            name = name.encode().decode()
            found = self.slots[name] = len(self.slots)
            body = orjson.dumps(name)[1:-1].decode()
            if body != name:
                self.escaped[name] = body
        return found

    def fit(self, cluster: Cluster) -> None:
        """Renumber from the cluster's nodes when gone ones make up most of the index."""
        if len(self.slots) > 2 * len(cluster.views) + SLACK:
            self.slots, self.escaped = {}, {}
            self.epoch += 1
            for name in cluster.views:
                self.slot(name)

    def of(self, names: list[str]) -> tuple[int, ...]:
        """The names' slots, in their order; KeyError for a name never held."""
        if len(names) > 1:
            return cast("tuple[int, ...]", itemgetter(*names)(self.slots))
        return tuple(self.slots[name] for name in names)

    def locate(self, names: list[str]) -> Slots:
        """The names' slots, in their order; KeyError for a name never held."""
        if len(names) >= HASHED_FROM and len(self.slots) >= HASHED_INDEX_FROM:
            hashed = self._hashed
            if hashed is None or hashed.size != len(self.slots):
                hashed = self._hashed = _Hashed.of(list(self.slots))
            found = hashed.slots(names) if hashed.usable else None
            if found is not None:
                return found
        return self.of(names)


Slots = tuple[int, ...] | npt.NDArray[np.intp]


def pick(codes: bytearray, slots: Slots) -> bytes:
    """A table's codes at `slots`, in their order; IndexError for a slot it has not seen."""
    if isinstance(slots, np.ndarray):
        return np.frombuffer(codes, np.uint8)[slots].tobytes()
    if len(slots) > 1:
        return bytes(itemgetter(*slots)(codes))
    return bytes(codes[slot] for slot in slots)


def repeats(slots: Slots) -> bool:
    """Whether a slot comes twice."""
    if isinstance(slots, np.ndarray):
        ordered = np.sort(slots)
        return bool((ordered[1:] == ordered[:-1]).any())
    return len(set(slots)) < len(slots)


SLACK = 1024
HASHED_FROM = 1000
HASHED_INDEX_FROM = 10_000


class _Hashed:
    """The index's names as rows of one numpy array, and each row's hash in a sorted array with
    a directory by its top bits: a call's names are converted in one step, hashed and found
    with a few passes over arrays, and each match compared with its name's row, so that what a
    name costs is the same at any size of cluster. It takes ASCII names (Kubernetes node names
    are DNS names); with any other name, or two names of one hash, the dict answers."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.usable = False
        self.dtype = np.dtype("S8")
        self.rows = np.zeros((0, 1), np.uint64)
        self.hashes = np.zeros(0, np.uint64)
        self.slot_of = np.zeros(0, np.intp)
        self.first = np.zeros(2, np.intp)
        self.shift = np.uint64(63)

    @classmethod
    def of(cls, keys: list[str]) -> _Hashed:
        found = cls(len(keys))
        if not keys or "\0" in "".join(keys):
            return found
        width = -(-(max(map(len, keys)) + 1) // 8) * 8
        found.dtype = np.dtype(f"S{width}")
        try:
            rows = np.array(keys, dtype=found.dtype)
        except UnicodeEncodeError:
            return found
        words = rows.view(np.uint64).reshape(len(keys), width // 8)
        hashes = _mixed(words)
        found.slot_of = np.argsort(hashes, kind="stable")
        found.hashes, found.rows = hashes[found.slot_of], words[found.slot_of]
        if len(keys) > 1 and not np.diff(found.hashes).all():
            return found  # two names of one hash
        bits = max(1, (4 * len(keys) - 1).bit_length())
        found.shift = np.uint64(64 - bits)
        top = (found.hashes >> found.shift).astype(np.intp)
        found.first = np.searchsorted(top, np.arange((1 << bits) + 1)).astype(np.int32)
        found.usable = True
        return found

    def slots(self, names: list[str]) -> npt.NDArray[np.intp] | None:
        """The names' slots, or None if any name is not found here (the dict will say)."""
        if "\0" in "".join(names):
            return None  # a row pads with NULs: "n\0" and "n" would be one row
        try:
            rows = np.array(names, dtype=self.dtype).view(np.uint64).reshape(len(names), -1)
        except UnicodeEncodeError:
            return None
        hashes = _mixed(rows)
        top = (hashes >> self.shift).astype(np.intp)
        at, end = self.first[top], self.first[top + 1]
        left = np.flatnonzero(at < end)
        if len(left) < len(names):
            return None
        found = np.full(len(names), -1, np.intp)
        while len(left):  # each name's bucket holds one or two hashes, most often
            where = at[left]
            hit = self.hashes[where] == hashes[left]
            found[left[hit]] = where[hit]
            at[left] += 1
            left = left[~hit]
            left = left[at[left] < end[left]]
        if (found < 0).any() or not (np.take(self.rows, found, axis=0) == rows).all():
            return None
        return self.slot_of[found]


def _mixed(rows: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of each row (multiply and xor-shift per word; wraps as C does)."""
    hashes = np.full(len(rows), 0x9E3779B97F4A7C15, np.uint64)
    for column in rows.T:
        hashes ^= column
        hashes *= np.uint64(0xBF58476D1CE4E5B9)
        hashes ^= hashes >> np.uint64(31)
    return hashes
