"""Where the emulated scheduler's time comes from.

The extender's own timers (a gang barrier) run on the event loop's clock, so next to a real
extender use `RealClock` with small backoffs, or `LoopClock` on an event loop whose clock is
simulated (kubesim/simulate/clock.py), where the extender's timers and the emulator's share one
simulated time; `ManualClock` is for tests of the queue and the recorder on their own, where time
moves only when the test says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds, monotonic."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    async def wait(self, woken: asyncio.Event, seconds: float) -> None:
        """Sleep `seconds`, or less when this clock can be woken by `woken` being set."""
        ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))

    async def wait(self, woken: asyncio.Event, seconds: float) -> None:
        await self.sleep(seconds)


class LoopClock:
    """The clock of the event loop it is first read on (still readable once that loop has
    stopped), woken early by events: on a loop whose clock is simulated, idle waits must end
    at the next thing that happens, not poll."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def now(self) -> float:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))

    async def wait(self, woken: asyncio.Event, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(woken.wait(), max(seconds, 0.0))


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

    async def wait(self, woken: asyncio.Event, seconds: float) -> None:
        await self.sleep(seconds)
