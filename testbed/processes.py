"""Child processes that tests and benches wait on by what they say, never by the clock.

A child is ready when it logs that it is (its "listening on", its "agent started"), not after a
sleep that a loaded machine can outlast. Its stderr is read as it comes, kept whole, and shown
in every failure, so that a child that died says why.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Self

# How long a child may take to say something before a test gives up on it: far above what a
# loaded 2-core machine needs, so that only a child that hangs or died reaches it.
PATIENCE_SECONDS = 60.0


class ChildOutput:
    """The lines a child writes to one pipe, collected by a thread as they come."""

    def __init__(self, pipe: IO[str]) -> None:
        self._lines: list[str] = []
        self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[str]) -> None:
        for line in pipe:
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._changed:
            return "".join(self._lines)

    def wait_for(self, pattern: str, seconds: float = PATIENCE_SECONDS) -> re.Match[str]:
        """The first line matching the regular expression `pattern`, once the child wrote it."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + seconds
        seen = 0
        with self._changed:
            while True:
                for line in self._lines[seen:]:
                    if match := compiled.search(line):
                        return match
                seen = len(self._lines)
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    why = "closed its output" if self._closed else f"said nothing in {seconds}s"
                    raise AssertionError(
                        f"the child {why} without a line matching {pattern!r}; it wrote:\n"
                        + "".join(self._lines)
                    )
                self._changed.wait(left)

    def close(self, seconds: float = PATIENCE_SECONDS) -> str:
        """Everything the child wrote, once it closed the pipe (it exited)."""
        self._thread.join(seconds)
        return self.text


class Child:
    """A child process with its stderr read as it comes (stdout too, when asked)."""

    def __init__(
        self, argv: Sequence[str | Path], cwd: Path | None = None, stdout: bool = False
    ) -> None:
        self.process = subprocess.Popen(
            [str(a) for a in argv],
            cwd=cwd,
            stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        self.stderr = ChildOutput(self.process.stderr)
        self.stdout = ChildOutput(self.process.stdout) if self.process.stdout else None

    def wait(self, seconds: float = PATIENCE_SECONDS) -> int:
        """The exit status; a child still running after `seconds` is killed and reported."""
        try:
            return self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(
                f"the child ran on for {seconds}s; it wrote:\n{self.stderr.close()}"
            ) from None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.stderr.close()
        if self.stdout:
            self.stdout.close()
