"""Stopping background tasks: every service runs watches and loops as asyncio tasks beside its
server, and stops them the same way when it shuts down."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancelled(*tasks: asyncio.Task[Any]) -> None:
    """Cancel the tasks, then wait until each has ended (its cancellation swallowed)."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
