"""The logging module's process-wide state, put back as it was after in-process CLI calls.

`kube-rdma`'s `main()` configures logging for its process (root handlers, root level, the
module's flags for caller lookup). A test that calls `main([...])` in-process would leave that
configuration to every later test: handlers bound to a capture that is closed by then, a root
level that depends on test order.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# The loggers whose level kube-rdma's configuration sets, besides the root.
_NAMED = ("aiohttp.access",)
_FLAGS = ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing")


@dataclass(frozen=True)
class LoggingState:
    handlers: tuple[logging.Handler, ...]
    root_level: int
    levels: tuple[int, ...]
    flags: tuple[Any, ...]

    @classmethod
    def now(cls) -> LoggingState:
        root = logging.getLogger()
        return cls(
            handlers=tuple(root.handlers),
            root_level=root.level,
            levels=tuple(logging.getLogger(name).level for name in _NAMED),
            flags=tuple(getattr(logging, flag) for flag in _FLAGS),
        )

    def restore(self) -> None:
        root = logging.getLogger()
        root.handlers[:] = self.handlers
        root.setLevel(self.root_level)
        for name, level in zip(_NAMED, self.levels, strict=True):
            logging.getLogger(name).setLevel(level)
        for flag, value in zip(_FLAGS, self.flags, strict=True):
            setattr(logging, flag, value)


@contextlib.contextmanager
def preserved_logging() -> Iterator[LoggingState]:
    """The logging state on entry, restored on exit whatever the body configured."""
    state = LoggingState.now()
    try:
        yield state
    finally:
        state.restore()
