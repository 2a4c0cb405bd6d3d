"""One pod shape's answers for every node of the cluster, kept current as nodes change.

kube-scheduler asks about the same few pod shapes over and over (the members of a job are
alike), each time for hundreds or thousands of node names. Judging them per call, even at one
cached lookup per node, is a Python loop over the names that costs more than the HTTP and JSON
around it. So, per shape, the extender keeps the answer for every node: whether it passes, and
for a failing node its entry of the answer's failure map already encoded as JSON, of a class
that says which map it belongs to (resolvable or not); and each node's total score. A call then
only picks its names out of those with passes over the list that run in C (one dict lookup per
name, identity tests, `bytes.join`), in the order the names came, and the encoder copies the
joined pieces as they are (`orjson.Fragment`).

The tables follow the cluster model's change log (`Cluster.changed_since`): before a call, the
nodes whose view changed since the table was last used are judged again, and a table that fell
too far behind is rebuilt. What a table holds is the plain node; what gang plans hold on a node
is laid over it per call by the engine, for the few names it concerns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import compress, repeat
from operator import is_, itemgetter
from typing import cast

import orjson

from extender.cluster.model import Cluster, NodeInfo
from extender.filters import Verdict
from extender.protocol import Failures, HostScores, host_piece


class Names:
    """One copy of every node name, shared by the tables as their keys.

    Looking a name up compares it with the stored key, so the stored keys' memory is read once
    per name and call. The names in the cluster model are strewn over the heap between the
    objects decoded with each Node; copies made one after another, when a first table is built,
    sit close together and make those reads about twice as fast."""

    def __init__(self) -> None:
        self._copies: dict[str, str] = {}

    def copy(self, name: str) -> str:
        found = self._copies.get(name)
        if found is None:
            if len(self._copies) > _NAMES_LIMIT:
                self._copies.clear()  # nodes come and go: forget the names of gone ones
            found = name.encode().decode()
            self._copies[found] = found
        return found


_NAMES_LIMIT = 100_000


class _Table:
    """Something per node name, brought up to date from the cluster's change log."""

    def __init__(self, names: Names) -> None:
        self._names = names
        self._seen: int | None = None

    def sync(self, cluster: Cluster) -> None:
        changed = None if self._seen is None else cluster.changed_since(self._seen)
        views, copy = cluster.views, self._names.copy
        if changed is None:
            self._clear()
            for name, node in views.items():
                self._put(copy(name), node)
        else:
            for name in dict.fromkeys(changed):
                self._drop(name)
                found = views.get(name)
                if found is not None:
                    self._put(copy(name), found)
        self._seen = cluster.changes

    def _clear(self) -> None:
        raise NotImplementedError

    def _put(self, name: str, node: NodeInfo) -> None:
        raise NotImplementedError

    def _drop(self, name: str) -> None:
        raise NotImplementedError


_PASSES = False
"""What the table holds for a passing node: nothing per node is needed to answer."""
_NEVER_FITS = None
"""What the table holds for a node that fails whatever is freed; its piece is kept apart."""
_UNKNOWN = object()
# The two markers are falsy and every piece (bytes, never empty) is true: `filter(None, ...)`
# picks the pieces of the nodes that fail for now in one pass in C, with no call per entry.


def _piece(name: str, reason: str) -> bytes:
    """A node's `"name":"reason"` entry of a failure map."""
    return orjson.dumps(name) + b":" + orjson.dumps(reason)


class Verdicts(_Table):
    """Every node's verdict for one shape: a marker when it passes; for a node that fails for
    now, its entry of the answer's failure map already encoded; for one that fails whatever is
    freed, a marker, its entry kept in a table of its own. And how many of each there are, so
    that a table failing nodes of one kind only skips telling them apart."""

    def __init__(self, names: Names, judge: Callable[[NodeInfo], Verdict]) -> None:
        super().__init__(names)
        self._judge = judge
        self._entries: dict[str, bytes | bool | None] = {}
        self._never: dict[str, bytes] = {}
        self._fails = 0

    def _clear(self) -> None:
        self._entries, self._never, self._fails = {}, {}, 0

    def _drop(self, name: str) -> None:
        found = self._entries.pop(name, _PASSES)
        if found is _NEVER_FITS:
            del self._never[name]
        elif found is not _PASSES:
            self._fails -= 1

    def _put(self, name: str, node: NodeInfo) -> None:
        self.place(name, self._judge(node))

    def place(self, name: str, verdict: Verdict) -> None:
        self._drop(name)
        if verdict.ok:
            self._entries[name] = _PASSES
        elif verdict.resolvable:
            self._entries[name] = _piece(name, verdict.reason)
            self._fails += 1
        else:
            self._entries[name] = _NEVER_FITS
            self._never[name] = _piece(name, verdict.reason)

    def overlaid(self, verdicts: Mapping[str, Verdict]) -> Verdicts:
        """A copy with `verdicts` in place of the nodes' own (what gang plans hold counted)."""
        copy = Verdicts(self._names, self._judge)
        copy._entries, copy._never = dict(self._entries), dict(self._never)
        copy._fails = self._fails
        for name, verdict in verdicts.items():
            copy.place(name, verdict)
        return copy

    def sort(self, names: list[str], unknown: str) -> tuple[list[str], Failures, Failures]:
        """The passing names, in their order, and the failing ones with their reasons, each map
        in the names' order; a name not in the cluster fails for the `unknown` reason
        (resolvable).

        One dict lookup per name finds its entry (`itemgetter`, no call per name); the rest are
        passes over that list in C (identity tests, truth tests, `bytes.join`), and a second
        lookup for the names that never fit only."""
        try:
            found = itemgetter(*names)(self._entries) if len(names) > 1 else None
            entries = list(found) if found is not None else [self._entries[n] for n in names]
        except KeyError:  # a name not in the cluster (rare: a node just added, or no node)
            return self._sort_with_unknown(names, unknown)
        passed = list(compress(names, map(is_, entries, repeat(_PASSES))))
        if len(passed) == len(names):
            return passed, Failures([]), Failures([])
        failed = list(filter(None, entries)) if self._fails else []
        return passed, Failures(cast("list[bytes]", failed)), self._never_among(names, entries)

    def _never_among(self, names: list[str], entries: list[object]) -> Failures:
        if not self._never:
            return Failures([])
        never = list(compress(names, map(is_, entries, repeat(_NEVER_FITS))))
        return Failures(list(map(self._never.__getitem__, never)))

    def _sort_with_unknown(
        self, names: list[str], unknown: str
    ) -> tuple[list[str], Failures, Failures]:
        entries = list(map(self._entries.get, names, repeat(_UNKNOWN)))
        passed = list(compress(names, map(is_, entries, repeat(_PASSES))))
        failed: list[bytes] = []
        for name, entry in zip(names, entries, strict=True):
            if entry is _UNKNOWN:
                failed.append(_piece(name, unknown))
            elif isinstance(entry, bytes):
                failed.append(entry)
        return passed, Failures(failed), self._never_among(names, entries)


class Totals(_Table):
    """Every node's total score for one shape under one set of weights, the criteria that read
    gang plans at their neutral score; and its HostPriority answer piece already encoded."""

    def __init__(self, names: Names, total: Callable[[NodeInfo], float], weights: object) -> None:
        super().__init__(names)
        self._total = total
        self.weights = weights
        """The weights the totals are for (compared by identity)."""
        self.totals: dict[str, float] = {}
        self._pieces: dict[str, bytes] = {}

    def _clear(self) -> None:
        self.totals = {}
        self._pieces = {}

    def _drop(self, name: str) -> None:
        self.totals.pop(name, None)
        self._pieces.pop(name, None)

    def _put(self, name: str, node: NodeInfo) -> None:
        total = self.totals[name] = self._total(node)
        self._pieces[name] = host_piece(name, total)

    def of(self, names: list[str], unknown: float) -> dict[str, float]:
        """Name -> total, in the names' order; a name not in the cluster gets `unknown`."""
        return dict(zip(names, map(self.totals.get, names, repeat(unknown)), strict=True))

    def answer(self, names: list[str], unknown: float) -> HostScores:
        """The HostPriorityList for `names` as `host_priorities(self.of(names, unknown))` encodes
        it: one lookup per name and a `bytes.join`. A name sent twice is answered once (a
        repeated host would count twice in kube-scheduler's sum)."""
        if len(set(names)) < len(names):
            names = list(dict.fromkeys(names))
        try:
            pieces = itemgetter(*names)(self._pieces) if len(names) > 1 else self._one(names)
        except KeyError:  # a name not in the cluster (rare: a node just added, or no node)
            pieces = [self._pieces.get(n) or host_piece(n, unknown) for n in names]
        return HostScores(pieces)

    def _one(self, names: list[str]) -> list[bytes]:
        return [self._pieces[name] for name in names]
