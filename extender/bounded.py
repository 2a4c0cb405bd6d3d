"""Caches of bounded size, for what the engine keeps between calls.

The engine keeps answers keyed by interned node states and pod shapes, which only grow as the
cluster changes: each cache is either cleared past a size limit (`bound`: cheap to refill, one
entry per state) or holds the most recently used few (`Recent`: tables over every node, costly
to build, so the ones in use stay)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

CACHE_LIMIT = 200_000
"""Entries a per-state cache holds before it starts over."""

_V = TypeVar("_V")


def bound(cache: dict[Any, Any]) -> None:
    """Start `cache` over once it holds `CACHE_LIMIT` entries."""
    if len(cache) >= CACHE_LIMIT:
        cache.clear()


class Recent(Generic[_V]):
    """The `limit` most recently used entries: one used or put moves to the end, and putting
    one more drops the least recently used."""

    def __init__(self, limit: int) -> None:
        self._entries: OrderedDict[Hashable, _V] = OrderedDict()
        self._limit = limit

    def get(self, key: Hashable) -> _V | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: Hashable, value: _V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self._limit:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
