"""An asyncio event loop whose clock is simulated: when nothing is ready to run, time jumps to
the next timer instead of waiting for it.

asyncio's loop asks its selector to wait at most until the next timer
(`BaseEventLoop._run_once` passes that timeout to `selector.select`), then runs the timers due by
`loop.time()`. So a selector that, finding no file ready, moves the loop's clock forward by the
timeout turns every `asyncio.sleep`, `wait_for` and `call_later` into a simulated one, without
touching asyncio's internals. Nothing in a simulation waits on a socket or a thread: a loop that
has neither a callback ready nor a timer set can never wake, and is reported as stuck.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Stuck(RuntimeError):
    """The simulation waits for something that no timer or task will ever bring."""


class _Selector(selectors.BaseSelector):
    """A real selector (for the loop's own wake-up pipe) that, where it would block, advances
    the simulated clock instead."""

    def __init__(self, loop: SimulatedLoop) -> None:
        self._real = selectors.DefaultSelector()
        self._loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def get_map(self) -> Any:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Stuck("the simulation is stuck: no task can run and no timer is set")
        self._loop.advance(timeout)
        return []


class SimulatedLoop(asyncio.SelectorEventLoop):
    """`time()` is simulated seconds from 0, moved on only when every task waits."""

    def __init__(self) -> None:
        self._now = 0.0
        super().__init__(_Selector(self))

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += max(seconds, 0.0)


def run_simulated(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to completion on a fresh loop of simulated time."""
    with asyncio.Runner(loop_factory=SimulatedLoop) as runner:
        return runner.run(main)
