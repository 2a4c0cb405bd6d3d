"""Waiting for a condition in async tests and benches, instead of sleeping a guessed time."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable

POLL_SECONDS = 0.002
PATIENCE_SECONDS = 30.0
"""How long a condition may take by default: it returns as soon as the condition holds, so the
bound only decides how long a failure takes to show, and a machine under load (CI's two cores,
one of them busy) must never turn a slow success into a failure."""


async def eventually(condition: Callable[[], object], within: float = PATIENCE_SECONDS) -> None:
    """Wait until `condition()` (awaited when it returns an awaitable) is truthy, polling often;
    AssertionError when `within` seconds pass first."""
    try:
        async with asyncio.timeout(within):
            while True:
                if await _truthy(condition()):
                    return
                await asyncio.sleep(POLL_SECONDS)
    except TimeoutError:
        raise AssertionError(f"condition still false after {within}s") from None


async def _truthy(result: object) -> bool:
    return bool(await result if inspect.isawaitable(result) else result)
