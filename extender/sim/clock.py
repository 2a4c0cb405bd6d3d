"""Where the emulated scheduler's time comes from.

The extender's own timers (a gang barrier) run in real time, so next to a real extender use
`RealClock` with small backoffs; `ManualClock` is for tests of the queue and the recorder on their
own, where time moves only when the test says so.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds, monotonic."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


class ManualClock:
    """Time that moves only when told to (or when slept on)."""

    def __init__(self, start: float = 0.0) -> None:
        self.time = start

    def now(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds

    async def sleep(self, seconds: float) -> None:
        self.time += max(seconds, 0.0)
        await asyncio.sleep(0)
