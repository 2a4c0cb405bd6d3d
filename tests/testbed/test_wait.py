"""`eventually`: polls plain and async conditions, and fails with the time it waited."""

from __future__ import annotations

import pytest

from testbed.wait import eventually


async def test_plain_and_async_conditions() -> None:
    calls: list[int] = []

    def third_time() -> bool:
        calls.append(1)
        return len(calls) >= 3

    async def at_once() -> str:
        return "yes"

    await eventually(third_time)
    await eventually(at_once)
    assert len(calls) == 3


async def test_a_condition_that_stays_false() -> None:
    with pytest.raises(AssertionError) as e:
        await eventually(lambda: 0, within=0.05)
    assert str(e.value) == "condition still false after 0.05s"
