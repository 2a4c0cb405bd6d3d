"""Which watch events a reflector applies, judged by resourceVersion.

Kubernetes calls resourceVersions opaque, but every apiserver backed by etcd hands out etcd's
revision, one integer that grows with every write, and one watch stream delivers its events in
increasing order of it (a fact the watch cache and etcd's own watch guarantee). The list is the
replace point: it holds every write up to its resourceVersion. So, counting from the last list:
- an event at or below the list's version is already in the list: ignore it;
- an event whose version was applied a moment ago is a duplicate (a proxy or a retry sent it
  twice; one version is one write, so one event of a given resource): ignore it;
- an event above every version seen is news: apply it;
- anything else came out of order. Applying it could put an object back to an older state, and
  skipping it could lose a write, so the stream cannot be trusted: re-list (`OutOfOrder`).
Only the last `RECENT` applied versions are remembered, so a duplicate older than that is taken
for an event out of order, which costs a re-list and never a wrong cache. Where a version is not
an integer (an apiserver not backed by etcd), nothing is compared: every event is applied and
the watch resumes from the last version seen, as before this module existed.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import Final

RECENT: Final = 1024
"""How many applied versions are remembered to recognise duplicates."""


class Verdict(enum.Enum):
    APPLY = "apply"
    STALE = "stale"
    """A duplicate, or a write the list already holds."""
    OUT_OF_ORDER = "out of order"


class OutOfOrder(Exception):
    """A watch event older than one already applied, and not a duplicate: re-list."""


class EventOrder:
    """The versions seen since the last list, and the one to resume a watch from."""

    def __init__(self, listed: str, recent: int = RECENT) -> None:
        self._listed = _number(listed)
        self._latest = self._listed
        self._last = listed
        self._recent: deque[int] = deque(maxlen=recent)
        self._applied: set[int] = set()

    @property
    def resume_from(self) -> str:
        """The resourceVersion a new watch starts from: the newest seen."""
        return self._last

    def judge(self, version: str) -> Verdict:
        """Whether to apply an event at `version`; an applied one is remembered."""
        number = _number(version)
        if number is None or self._latest is None or self._listed is None:
            self._last = version or self._last
            return Verdict.APPLY
        if number <= self._listed or number in self._applied:
            return Verdict.STALE
        if number < self._latest:
            return Verdict.OUT_OF_ORDER
        self._remember(number)
        self._latest, self._last = number, version
        return Verdict.APPLY

    def bookmark(self, version: str) -> None:
        """A BOOKMARK: every write up to `version` has been sent, so resume after it."""
        number = _number(version)
        if number is None or self._latest is None:
            self._last = version or self._last
        elif number > self._latest:
            self._latest, self._last = number, version

    def _remember(self, number: int) -> None:
        if len(self._recent) == self._recent.maxlen:
            self._applied.discard(self._recent[0])
        self._recent.append(number)
        self._applied.add(number)


def _number(version: str) -> int | None:
    try:
        return int(version)
    except ValueError:
        return None
