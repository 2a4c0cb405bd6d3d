"""The simulated event loop: timers fire in simulated time at once, and a loop that can never
wake says so."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kubesim.simulate.clock import Stuck, run_simulated


def test_a_day_of_timers_takes_no_time() -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()

        async def at(seconds: float) -> float:
            await asyncio.sleep(seconds)
            return loop.time()

        done = await asyncio.gather(at(86_400), at(5), at(60))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.sleep(100), 4)
        return [*done, loop.time()]

    # A day of sleeps: a clock that slept for real would never end, so the run is waited for
    # with a bound, in a thread of its own that is left behind if it never ends.
    result: list[list[float]] = []
    runner = threading.Thread(target=lambda: result.append(run_simulated(main())), daemon=True)
    runner.start()
    runner.join(timeout=60)
    assert result == [[86_400.0, 5.0, 60.0, 86_404.0]]


def test_a_loop_that_can_never_wake_is_stuck() -> None:
    async def main() -> None:
        await asyncio.Event().wait()

    with pytest.raises(Stuck, match="no task can run and no timer is set"):
        run_simulated(main())
