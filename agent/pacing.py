"""How often the agent may patch its Node: never more than the apiserver should carry per node.

The topology document changes whenever a port changes state or a counter moves, and a flapping
link or a noisy one would otherwise patch the Node on every scan, from every node at once. So
after the first patch the next one waits `gap` seconds; what goes out then is the latest scan, so
whatever flapped in between is coalesced into one patch. The gap starts at `min_gap` (60 s),
doubles each time a patch follows the previous one within twice the gap (the node keeps
changing) up to `max_gap` (10 minutes), and falls back to `min_gap` after a calm spell. A change
after a calm spell goes out at once; any change goes out within `max_gap`.

The readiness label and the taint are not paced (the caller decides): they are what keeps pods
off a broken node, and the port hysteresis (agent/health.py) already bounds how often they flip.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

MIN_GAP_SECONDS: Final = 60.0
MAX_GAP_SECONDS: Final = 600.0


class PatchPacer:
    def __init__(
        self,
        min_gap: float = MIN_GAP_SECONDS,
        max_gap: float = MAX_GAP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if min_gap < 0 or max_gap < min_gap:
            raise ValueError("the patch gaps must satisfy 0 <= min_gap <= max_gap")
        self._min_gap = min_gap
        self._max_gap = max_gap
        self._clock = clock
        self._gap = min_gap
        self._last: float | None = None

    def wait(self) -> float:
        """Seconds before the next patch may go out; 0: now."""
        if self._last is None:
            return 0.0
        return max(self._last + self._gap - self._clock(), 0.0)

    def patched(self) -> None:
        """A patch went out now: widen the gap while patches follow each other closely."""
        now = self._clock()
        if self._last is not None and now - self._last < 2 * self._gap:
            self._gap = min(2 * self._gap, self._max_gap)
        else:
            self._gap = self._min_gap
        self._last = now
