"""One pod shape's in-tree verdict (or score) on every node, kept current between cycles.

kube-scheduler runs its filters on every node it walks, each cycle. The emulator's verdict on a
node depends only on the node, what is used and nominated there and the pod's shape
(kubesim/scheduler/placement.py's `Shape`), so it is kept per shape in node-tree order and only
the nodes changed since (the journals of kubesim/scheduler/changes.py) are judged again. The
walk itself (`nodetree.scan_verdicts`) then reads the table and gives what judging every node
would have given: a day at `percentageOfNodesToScore` 100 on 20,000 nodes is otherwise ~100 M
verdicts. The GPU score (LeastAllocated) is kept the same way, per GPU count asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from kubesim.scheduler.changes import ChangeLog
from kubesim.scheduler.nodetree import NodeTree

T = TypeVar("T")


class NodeTable(Generic[T]):
    """`judge(node)` for every node of the tree's list, in its order: a verdict (None: the pod
    fits) or a score."""

    def __init__(self, judge: Callable[[str], T]) -> None:
        self._judge = judge
        self._verdicts: list[T] = []
        self._layout: int | None = None
        self._marks: list[int] = []

    def current(self, tree: NodeTree, journals: Sequence[ChangeLog]) -> list[T]:
        """The verdicts on `tree.list()`, the nodes `journals` name since the last call judged
        again (every node when the list changed or a journal forgot where this table was)."""
        changed = self._changed(tree.layout, journals)
        if changed is None:
            self._verdicts = [self._judge(name) for name in tree.list()]
        else:
            positions = tree.positions()
            for name in changed:
                at = positions.get(name)
                if at is not None:
                    self._verdicts[at] = self._judge(name)
        self._layout = tree.layout
        self._marks = [journal.end for journal in journals]
        return self._verdicts

    def _changed(self, layout: int, journals: Sequence[ChangeLog]) -> set[str] | None:
        """The nodes to judge again; None: all of them."""
        if layout != self._layout or len(journals) != len(self._marks):
            return None
        changed: set[str] = set()
        for journal, mark in zip(journals, self._marks, strict=True):
            since = journal.since(mark)
            if since is None:
                return None
            changed.update(since)
        return changed
