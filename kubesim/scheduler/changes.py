"""A journal of the nodes whose state changed, for readers that keep something per node.

The in-tree verdicts of a pod shape on every node (kubesim/scheduler/verdicts.py) stay current
by judging again only the nodes named here since they last read, instead of every node at every
scheduling cycle. The journal keeps its latest `limit` entries; a reader further behind is told
so and starts over.
"""

from __future__ import annotations


class ChangeLog:
    def __init__(self, limit: int = 1 << 16) -> None:
        self._names: list[str] = []
        self._first = 0
        """Where `_names[0]` stands in the whole journal (what came before is forgotten)."""
        self._limit = limit

    @property
    def end(self) -> int:
        """Where the next entry will stand: a reader's mark."""
        return self._first + len(self._names)

    def add(self, node: str) -> None:
        self._names.append(node)
        if len(self._names) > self._limit:
            dropped = len(self._names) - self._limit // 2
            del self._names[:dropped]
            self._first += dropped

    def since(self, mark: int) -> list[str] | None:
        """The nodes changed from `mark` on (repeats included); None when some are forgotten."""
        if mark < self._first:
            return None
        return self._names[mark - self._first :]
