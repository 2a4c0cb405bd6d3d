"""One pod shape's answers for every node of the cluster, kept current as nodes change.

kube-scheduler asks about the same few pod shapes over and over (the members of a job are
alike), each time for hundreds or thousands of node names. Judging them per call, even at one
cached lookup per node, is a Python loop over the names that costs more than the HTTP and JSON
around it. So, per shape, the extender keeps the answer for every node, and a call only picks
its names out with passes over the list that run in C, in the order the names came; the encoder
copies the joined answer as it is (`orjson.Fragment`).

What a call touches is kept small and in one piece, so that its cost does not grow with the
cluster (at 100,000 nodes a dict of every node outgrows the CPU's caches):

- one index, `Names` (extender/nameindex.py), numbers the node names (each node's slot),
  shared by every table, and finds a call's names;
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
from typing import cast

import numpy as np
import numpy.typing as npt
import orjson

from extender.cluster.model import Cluster, NodeInfo
from extender.filters import Verdict
from extender.nameindex import Names, pick, repeats
from extender.protocol import Failures, HostScores, host_piece, whole_score


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
            codes = pick(self._codes, self._names.locate(names))
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
            if repeats(slots):
                names = list(dict.fromkeys(names))
                slots = self._names.locate(names)
            scores = pick(self._scores, slots)
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
