"""Stopping background tasks: each is cancelled and awaited, its cancellation swallowed."""

from __future__ import annotations

import asyncio

from kube_rdma.core.tasks import cancelled


async def test_every_task_is_cancelled_and_has_ended() -> None:
    ended: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.append(name)

    tasks = [asyncio.create_task(forever(n)) for n in ("a", "b")]
    await asyncio.sleep(0)
    await cancelled(*tasks)
    assert sorted(ended) == ["a", "b"]
    assert all(t.cancelled() for t in tasks)


async def test_a_task_already_done_is_no_error() -> None:
    async def quick() -> int:
        return 1

    task = asyncio.create_task(quick())
    await task
    await cancelled(task)
    assert task.result() == 1
