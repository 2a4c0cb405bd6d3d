"""Local processes of the control plane and of kube-rdma, each logging to its own file."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

STOP_SECONDS = 10.0


class StartError(RuntimeError):
    """A process exited or never became ready; the message ends with its log's tail."""


@dataclass
class Process:
    name: str
    argv: Sequence[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                list(self.argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        return self

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def wait_ready(self, ready: Callable[[], bool], seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.alive:
                raise StartError(f"{self.name} exited: {self.tail()}")
            if ready():
                return
            time.sleep(0.1)
        raise StartError(f"{self.name} not ready after {seconds:.0f}s: {self.tail()}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL when it does not exit in time."""
        self._signal(signal.SIGTERM)
        self._reap()

    def kill(self) -> None:
        """SIGKILL at once: a crash, an OOM kill."""
        self._signal(signal.SIGKILL)
        self._reap()

    def _signal(self, sig: signal.Signals) -> None:
        if self.alive and self.popen is not None:
            self.popen.send_signal(sig)

    def _reap(self) -> None:
        if self.popen is None:
            return
        try:
            self.popen.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])
