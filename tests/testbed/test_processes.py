"""Waiting on a child by what it says: the line when it comes, its whole stderr when not."""

from __future__ import annotations

import sys

import pytest

from testbed.processes import Child

PY = sys.executable


def test_the_line_is_returned_once_written() -> None:
    script = "import sys, time; time.sleep(0.3); print('ready on port 4242', file=sys.stderr)"
    with Child([PY, "-c", script]) as child:
        assert child.stderr.wait_for(r"ready on port (\d+)").group(1) == "4242"
        assert child.wait() == 0


def test_a_child_that_dies_first_is_shown_whole() -> None:
    script = "import sys; print('loading', file=sys.stderr); sys.exit('config is bad')"
    with Child([PY, "-c", script]) as child, pytest.raises(AssertionError) as failure:
        child.stderr.wait_for("ready")
    assert str(failure.value) == (
        "the child closed its output without a line matching 'ready'; it wrote:\n"
        "loading\nconfig is bad\n"
    )


def test_a_silent_child_is_given_up_on() -> None:
    with Child([PY, "-c", "import time; time.sleep(30)"]) as child:
        with pytest.raises(AssertionError) as failure:
            child.stderr.wait_for("ready", seconds=0.2)
        assert str(failure.value) == (
            "the child said nothing in 0.2s without a line matching 'ready'; it wrote:\n"
        )
        with pytest.raises(AssertionError) as overrun:
            child.wait(seconds=0.2)
        assert str(overrun.value) == "the child ran on for 0.2s; it wrote:\n"


def test_stdout_is_read_when_asked() -> None:
    with Child([PY, "-c", "print('{\"port\": 1}')"], stdout=True) as child:
        assert child.wait() == 0
        assert child.stdout is not None
        assert child.stdout.close() == '{"port": 1}\n'
