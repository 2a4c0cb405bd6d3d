"""One pod shape's answers for every node of the cluster, kept current as nodes change.

kube-scheduler asks about the same few pod shapes over and over (the members of a job are
alike), each time for hundreds or thousands of node names. Judging them per call, even at one
cached lookup per node, is a Python loop over the names that costs more than the HTTP and JSON
around it. So, per shape, the extender keeps the answer for every node: the names that pass,
the failing names with their reasons (resolvable or not), and each node's total score. A call
then only picks its names out of those with set and dict operations that run in C
(`filter(passing.__contains__, names)`, `map(totals.get, names)`), in the order the names came.

The tables follow the cluster model's change log (`Cluster.changed_since`): before a call, the
nodes whose view changed since the table was last used are judged again, and a table that fell
too far behind is rebuilt. What a table holds is the plain node; what gang plans hold on a node
is laid over it per call by the engine, for the few names it concerns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import compress, repeat
from operator import not_

from extender.cluster.model import Cluster, NodeInfo
from extender.filters import Verdict


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


class Verdicts(_Table):
    """Every node's verdict for one shape: the reason it fails ("" when it passes), and which
    reasons leave a node unresolvable."""

    def __init__(self, names: Names, judge: Callable[[NodeInfo], Verdict]) -> None:
        super().__init__(names)
        self._judge = judge
        self.reasons: dict[str, str] = {}
        self.never: set[str] = set()
        """The nodes whose failure preemption cannot fix."""
        self._never_reasons: set[str] = set()
        self._fail_reasons: set[str] = set()

    def _clear(self) -> None:
        self.reasons, self.never = {}, set()
        self._never_reasons, self._fail_reasons = set(), set()

    def _drop(self, name: str) -> None:
        self.reasons.pop(name, None)
        self.never.discard(name)

    def _put(self, name: str, node: NodeInfo) -> None:
        self.place(name, self._judge(node))

    def place(self, name: str, verdict: Verdict) -> None:
        self.reasons[name] = "" if verdict.ok else verdict.reason
        if verdict.ok:
            return
        if verdict.resolvable:
            self._fail_reasons.add(verdict.reason)
        else:
            self.never.add(name)
            self._never_reasons.add(verdict.reason)

    def overlaid(self, verdicts: Mapping[str, Verdict]) -> Verdicts:
        """A copy with `verdicts` in place of the nodes' own (what gang plans hold counted)."""
        copy = Verdicts(self._names, self._judge)
        copy.reasons, copy.never = dict(self.reasons), set(self.never)
        copy._never_reasons, copy._fail_reasons = set(self._never_reasons), set(self._fail_reasons)
        for name, verdict in verdicts.items():
            copy._drop(name)
            copy.place(name, verdict)
        return copy

    def sort(
        self, names: list[str], unknown: str
    ) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """The passing names, in their order, and the failing ones with their reasons; a name
        not in the cluster fails for the `unknown` reason (resolvable).

        One dict lookup per name finds its reason; the rest are passes over that list in C.
        A reason says which side of the failures it is on, unless some text is both."""
        reasons = list(map(self.reasons.get, names, repeat(unknown)))
        passed = list(compress(names, map(not_, reasons)))
        if len(passed) == len(names):
            return passed, {}, {}
        failing = self._fail_reasons | {unknown}
        if failing & self._never_reasons:
            return passed, *self._sort_by_name(names, reasons)
        never = dict(
            compress(
                zip(names, reasons, strict=True), map(self._never_reasons.__contains__, reasons)
            )
        )
        failed = dict(
            compress(zip(names, reasons, strict=True), map(failing.__contains__, reasons))
        )
        return passed, failed, never

    def _sort_by_name(
        self, names: list[str], reasons: list[str]
    ) -> tuple[dict[str, str], dict[str, str]]:
        failed: dict[str, str] = {}
        never: dict[str, str] = {}
        for name, reason in zip(names, reasons, strict=True):
            if reason:
                (never if name in self.never else failed)[name] = reason
        return failed, never


class Totals(_Table):
    """Every node's total score for one shape under one set of weights, the criteria that read
    gang plans at their neutral score."""

    def __init__(self, names: Names, total: Callable[[NodeInfo], float], weights: object) -> None:
        super().__init__(names)
        self._total = total
        self.weights = weights
        """The weights the totals are for (compared by identity)."""
        self.totals: dict[str, float] = {}

    def _clear(self) -> None:
        self.totals = {}

    def _drop(self, name: str) -> None:
        self.totals.pop(name, None)

    def _put(self, name: str, node: NodeInfo) -> None:
        self.totals[name] = self._total(node)

    def of(self, names: list[str], unknown: float) -> dict[str, float]:
        """Name -> total, in the names' order; a name not in the cluster gets `unknown`."""
        return dict(zip(names, map(self.totals.get, names, repeat(unknown)), strict=True))
