"""One pod shape's answers for every node of the cluster, kept current as nodes change.

kube-scheduler asks about the same few pod shapes over and over (the members of a job are
alike), each time for hundreds or thousands of node names. Judging them per call, even at one
cached lookup per node, is a Python loop over the names that costs more than the HTTP and JSON
around it. So, per shape, the extender keeps the answer for every node, and a call only picks
its names out with passes over the list that run in C, in the order the names came; the encoder
copies the joined answer as it is (`orjson.Fragment`).

What a call touches is kept small and in one piece, so that its cost does not grow with the
cluster. At 100,000 nodes a dict of every node outgrows the CPU's caches, and a lookup then
costs the memory it reads: an index slot, an entry and the key string, each strewn over the
heap, and in a virtual machine each such read can also miss the TLB, whose refill walks two
page tables. So:

- one index, `Names`, numbers the node names (each node's slot), shared by every table; for a
  call of many names among 10,000 nodes or more it finds them with numpy (`_Hashed`): the
  names converted to rows of one array in one step, hashed, found in a sorted array of the
  nodes' hashes through a directory by their top bits, and each match compared with its node's
  row (exact: a name is only taken for a node whose name it is; any doubt, and the dict
  answers);
- a table is a byte per slot, not a dict and an object per node: a verdict table's code is the
  node's verdict (pass, or one of the shape's few failure reasons), a totals table's the node's
  whole score;
- the answer is joined per call from the names sent (in the cache, just decoded) and a small
  list of encoded reasons or scores, instead of from a piece encoded per node and shape (an
  object per node again, scattered over the heap).

Measured (bench/lookup.py, 5,000 names in tables of 5,000 / 20,000 / 100,000 nodes, CPU ms,
both designs in turn on one heap, load 3.4): filter 0.93 / 1.00 / 1.13 against the former
design's (a dict per shape from name to a piece encoded per node) 0.80 / 1.30 / 2.03,
prioritize 0.69 / 0.74 / 0.87 against 0.64 / 0.93 / 1.47. Tried and not kept: the shared index
and byte codes with the dict alone (as slow as the former design, growing as it did: the dict
lookup is the growth); the names hashed with Python's `hash` and searched in a sorted array
(hashing alone costs as much as a dict lookup at 5,000 nodes, and checking each match against
the node's name string reads the strewn strings again).

The tables follow the cluster model's change log (`Cluster.changed_since`): before a call, the
nodes whose view changed since the table was last used are judged again, and a table that fell
too far behind, or whose index was renumbered, is rebuilt. What a table holds is the plain node;
what gang plans hold on a node is laid over it per call by the engine, for the few names it
concerns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import compress, repeat
from operator import itemgetter
from typing import cast

import numpy as np
import numpy.typing as npt
import orjson

from extender.cluster.model import Cluster, NodeInfo
from extender.filters import Verdict
from extender.protocol import Failures, HostScores, host_piece, whole_score


class Names:
    """Every node name a table has held, numbered: the tables' shared index.

    The index answers a call's names with their slots in two ways. A dict (name -> slot) is
    exact and quick while it fits the caches; at tens of thousands of nodes each lookup reads
    an entry and a key string strewn over the heap, and its cost grows with the cluster.
    `_Hashed` looks the names up in numpy arrays laid out in one piece instead, at a cost that
    does not grow with the cluster but with a fixed part (some forty numpy calls, ~0.25 ms);
    it is used for calls of `_HASHED_FROM` names or more in an index of `_HASHED_INDEX_FROM`
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
        if len(self.slots) > 2 * len(cluster.views) + _SLACK:
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
        if len(names) >= _HASHED_FROM and len(self.slots) >= _HASHED_INDEX_FROM:
            hashed = self._hashed
            if hashed is None or hashed.size != len(self.slots):
                hashed = self._hashed = _Hashed.of(list(self.slots))
            found = hashed.slots(names) if hashed.usable else None
            if found is not None:
                return found
        return self.of(names)


Slots = tuple[int, ...] | npt.NDArray[np.intp]


def _pick(codes: bytearray, slots: Slots) -> bytes:
    """A table's codes at `slots`, in their order; IndexError for a slot it has not seen."""
    if isinstance(slots, np.ndarray):
        return np.frombuffer(codes, np.uint8)[slots].tobytes()
    if len(slots) > 1:
        return bytes(itemgetter(*slots)(codes))
    return bytes(codes[slot] for slot in slots)


def _repeats(slots: Slots) -> bool:
    """Whether a slot comes twice."""
    if isinstance(slots, np.ndarray):
        ordered = np.sort(slots)
        return bool((ordered[1:] == ordered[:-1]).any())
    return len(set(slots)) < len(slots)


_SLACK = 1024
_HASHED_FROM = 1000
_HASHED_INDEX_FROM = 10_000


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


def _joined(first: str, names: list[str], suffixes: list[str], cut: int, names_: Names) -> bytes:
    """`first`, then each name followed by its suffix (names JSON-escaped where needed), less
    the last suffix's `cut` characters (what opens the entry after it), encoded."""
    escaped = names_.escaped
    parts: list[str] = [first] * (2 * len(names) + 1)
    parts[1::2] = list(map(escaped.get, names, names)) if escaped else names
    parts[2::2] = suffixes
    parts[-1] = parts[-1][:-cut]
    return "".join(parts).encode()


def _chosen(table: npt.NDArray[np.object_], codes: bytes, mask: bytes | None = None) -> list[str]:
    """`table`'s entries at each code (whose `mask` byte is set), in their order."""
    found = np.frombuffer(codes, np.uint8)
    if mask is not None:
        found = found[np.frombuffer(mask, np.bool_)]
    return cast("list[str]", table[found].tolist())


class _Table:
    """A code per node, brought up to date from the cluster's change log."""

    def __init__(self, names: Names) -> None:
        self._names = names
        self._seen: int | None = None
        self._epoch = names.epoch

    def sync(self, cluster: Cluster) -> None:
        self._names.fit(cluster)
        if self._epoch != self._names.epoch or self._full():
            self._seen, self._epoch = None, self._names.epoch
        changed = None if self._seen is None else cluster.changed_since(self._seen)
        views = cluster.views
        if changed is None:
            self._clear()
            for name, node in views.items():
                self._put(name, node)
        else:
            for name in dict.fromkeys(changed):
                found = views.get(name)
                if found is None:
                    self._drop(name)
                else:
                    self._put(name, found)
        self._seen = cluster.changes

    def _full(self) -> bool:
        """Whether the table should start over (too many codes handed out)."""
        return False

    def _clear(self) -> None:
        raise NotImplementedError

    def _put(self, name: str, node: NodeInfo) -> None:
        raise NotImplementedError

    def _drop(self, name: str) -> None:
        raise NotImplementedError


_PASSES, _ABSENT, _FAILS, _NEVER_FITS, _OTHER = 0, 1, 2, 3, 4
"""The kinds of verdict code: the node passes; the table does not hold the node; it fails for
now; whatever is freed; or its verdict is kept by name (the shape has more reasons than codes).
Codes 0 and 1 are the first two kinds; each code after them stands for one failure reason."""
_CODES = 256
_KIND_MASKS = {kind: bytes(int(k == kind) for k in range(_CODES)) for kind in range(5)}
# `bytes.translate` tables from a code's kind to a mask of the names of that kind.


class Verdicts(_Table):
    """Every node's verdict for one shape, as a byte per slot: passing, absent, or one of the
    shape's failure reasons, each kept once with its kind (failing for now, or whatever is freed)
    and the `":"reason","` that follows a failing node's name in the answer's failure map."""

    def __init__(self, names: Names, judge: Callable[[NodeInfo], Verdict]) -> None:
        super().__init__(names)
        self._judge = judge
        self._clear()

    def _clear(self) -> None:
        self._codes = bytearray([_ABSENT]) * len(self._names.slots)
        self._kinds = bytearray([_PASSES, _ABSENT]) + bytearray([_OTHER]) * (_CODES - 2)
        self._suffixes = ["", ""]
        self._reasons: dict[tuple[bool, str], int] = {}
        self._others: dict[str, tuple[bool, bytes]] = {}
        self._counts = [0, len(self._codes), 0, 0, 0]
        self._suffix_table = np.array(self._suffixes, dtype=object)

    def _full(self) -> bool:
        return bool(self._others)

    def _drop(self, name: str) -> None:
        slot = self._names.slots.get(name)
        if slot is not None:
            self._set(slot, _ABSENT)

    def _put(self, name: str, node: NodeInfo) -> None:
        self.place(name, self._judge(node))

    def _set(self, slot: int, code: int) -> None:
        codes = self._codes
        if slot >= len(codes):
            grown = len(self._names.slots) - len(codes)
            codes.extend(bytes([_ABSENT]) * grown)
            self._counts[_ABSENT] += grown
        self._counts[self._kinds[codes[slot]]] -= 1
        self._counts[self._kinds[code]] += 1
        codes[slot] = code

    def _code(self, verdict: Verdict) -> int:
        if verdict.ok:
            return _PASSES
        key = (verdict.resolvable, verdict.reason)
        code = self._reasons.get(key)
        if code is None:
            if len(self._suffixes) == _CODES - 1:
                return _CODES - 1
            code = self._reasons[key] = len(self._suffixes)
            self._kinds[code] = _FAILS if verdict.resolvable else _NEVER_FITS
            self._suffixes.append('":' + orjson.dumps(verdict.reason).decode() + ',"')
        return code

    def place(self, name: str, verdict: Verdict) -> None:
        slot, code = self._names.slot(name), self._code(verdict)
        self._others.pop(name, None)
        if self._kinds[code] == _OTHER:
            self._others[name] = (verdict.resolvable, orjson.dumps(verdict.reason))
        self._set(slot, code)

    def overlaid(self, verdicts: Mapping[str, Verdict]) -> Verdicts:
        """A copy with `verdicts` in place of the nodes' own (what gang plans hold counted)."""
        copy = Verdicts(self._names, self._judge)
        copy._codes, copy._kinds = bytearray(self._codes), bytearray(self._kinds)
        copy._suffixes, copy._reasons = list(self._suffixes), dict(self._reasons)
        copy._others, copy._counts = dict(self._others), list(self._counts)
        copy._seen, copy._epoch = self._seen, self._epoch
        for name, verdict in verdicts.items():
            copy.place(name, verdict)
        return copy

    def sort(self, names: list[str], unknown: str) -> tuple[list[str], Failures, Failures]:
        """The passing names, in their order, and the failing ones with their reasons, each map
        in the names' order; a name not in the cluster fails for the `unknown` reason
        (resolvable).

        One lookup per name in the shared index and one pick of its code; the rest are passes
        over bytes in C (`bytes.translate` from codes to kinds to masks, `compress`,
        `str.join`)."""
        try:
            codes = _pick(self._codes, self._names.locate(names))
        except (KeyError, IndexError):  # a name not in the cluster (rare: just added, or none)
            return self._sort_by_name(names, unknown)
        kinds = codes.translate(self._kinds)
        counts = self._counts
        if (counts[_ABSENT] and _ABSENT in kinds) or (counts[_OTHER] and _OTHER in kinds):
            return self._sort_by_name(names, unknown)
        passed = list(compress(names, kinds.translate(_KIND_MASKS[_PASSES])))
        if len(passed) == len(names):
            return passed, Failures([]), Failures([])
        failed = self._failures(names, codes, kinds, _FAILS) if counts[_FAILS] else Failures([])
        never = self._failures(names, codes, kinds, _NEVER_FITS) if counts[_NEVER_FITS] else None
        return passed, failed, never or Failures([])

    def _failures(self, names: list[str], codes: bytes, kinds: bytes, kind: int) -> Failures:
        """The failure map of the names whose code is of `kind`, in their order."""
        mask = kinds.translate(_KIND_MASKS[kind])
        failing = list(compress(names, mask))
        if not failing:
            return Failures([])
        if len(self._suffix_table) != len(self._suffixes):
            self._suffix_table = np.array(self._suffixes, dtype=object)
        suffixes = _chosen(self._suffix_table, codes, mask)
        return Failures([_joined('"', failing, suffixes, 2, self._names)])

    def _sort_by_name(self, names: list[str], unknown: str) -> tuple[list[str], Failures, Failures]:
        """The per-name path, for calls naming nodes the table does not hold."""
        slots, codes = self._names.slots, self._codes
        passed: list[str] = []
        failed: list[bytes] = []
        never: list[bytes] = []
        for name in names:
            slot = slots.get(name, len(codes))
            code = codes[slot] if slot < len(codes) else _ABSENT
            kind = self._kinds[code]
            if kind == _PASSES:
                passed.append(name)
                continue
            if kind == _ABSENT:
                resolvable, reason = True, orjson.dumps(unknown)
            elif kind == _OTHER:
                resolvable, reason = self._others[name]
            else:
                resolvable, reason = kind == _FAILS, self._suffixes[code][2:-2].encode()
            (failed if resolvable else never).append(orjson.dumps(name) + b":" + reason)
        return passed, Failures(failed), Failures(never)


_HOST = '{"Host":"'
_SCORES = ["", *(f'","Score":{score}}},{{"Host":"' for score in range(11))]
"""What follows a host's name in the HostPriorityList for each score code (whole score + 1)."""
_SCORE_TABLE = np.array(_SCORES, dtype=object)


class Totals(_Table):
    """Every node's total score for one shape under one set of weights, the criteria that read
    gang plans at their neutral score; and, as a code per slot, its whole score as the
    HostPriorityList carries it (0 for a node the table does not hold)."""

    def __init__(self, names: Names, total: Callable[[NodeInfo], float], weights: object) -> None:
        super().__init__(names)
        self._total = total
        self.weights = weights
        """The weights the totals are for (compared by identity)."""
        self.totals: dict[str, float] = {}
        self._scores = bytearray()

    def _clear(self) -> None:
        self.totals = {}
        self._scores = bytearray(len(self._names.slots))

    def _drop(self, name: str) -> None:
        self.totals.pop(name, None)
        slot = self._names.slots.get(name, len(self._scores))
        if slot < len(self._scores):
            self._scores[slot] = 0

    def _put(self, name: str, node: NodeInfo) -> None:
        total = self.totals[name] = self._total(node)
        slot = self._names.slot(name)
        if slot >= len(self._scores):
            self._scores.extend(bytes(len(self._names.slots) - len(self._scores)))
        self._scores[slot] = whole_score(total) + 1

    def of(self, names: list[str], unknown: float) -> dict[str, float]:
        """Name -> total, in the names' order; a name not in the cluster gets `unknown`."""
        return dict(zip(names, map(self.totals.get, names, repeat(unknown)), strict=True))

    def answer(self, names: list[str], unknown: float) -> HostScores:
        """The HostPriorityList for `names` as `host_priorities(self.of(names, unknown))` encodes
        it: one lookup per name, one pick of its score, a `str.join`. A name sent twice is
        answered once (a repeated host would count twice in kube-scheduler's sum)."""
        if not names:
            return HostScores([])
        try:
            slots = self._names.locate(names)
            if _repeats(slots):
                names = list(dict.fromkeys(names))
                slots = self._names.locate(names)
            scores = _pick(self._scores, slots)
        except (KeyError, IndexError):  # a name not in the cluster (rare: just added, or none)
            return self._answer_by_name(names, unknown)
        if 0 in scores:
            return self._answer_by_name(names, unknown)
        suffixes = _chosen(_SCORE_TABLE, scores)
        return HostScores([_joined(_HOST, names, suffixes, len(_HOST) + 1, self._names)])

    def _answer_by_name(self, names: list[str], unknown: float) -> HostScores:
        names = list(dict.fromkeys(names))
        totals = self.totals
        return HostScores([host_piece(n, totals.get(n, unknown)) for n in names])
