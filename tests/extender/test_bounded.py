"""The engine's bounded caches: the most recently used tables stay, a per-state cache starts
over at its limit."""

from __future__ import annotations

import pytest

from extender import bounded
from extender.bounded import Recent, bound


def test_recent_keeps_the_most_recently_used() -> None:
    recent: Recent[str] = Recent(2)
    recent.put("a", "A")
    recent.put("b", "B")
    assert recent.get("a") == "A"  # "b" is now the least recently used
    recent.put("c", "C")
    assert (recent.get("a"), recent.get("b"), recent.get("c")) == ("A", None, "C")
    recent.put("a", "A2")  # replacing one keeps the count
    assert len(recent) == 2
    assert recent.get("a") == "A2"


def test_a_per_state_cache_starts_over_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "CACHE_LIMIT", 3)
    cache = {1: 1, 2: 2}
    bound(cache)
    assert cache == {1: 1, 2: 2}
    cache[3] = 3
    bound(cache)
    assert cache == {}
