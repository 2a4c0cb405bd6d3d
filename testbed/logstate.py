"""The logging module's process-wide state, put back as it was after in-process CLI calls.

`kube-rdma`'s `main()` configures logging for its process (root handlers, root level, the
module's flags for caller lookup), and some commands quiet a logger of their own. A test (or a
fixture) that calls `main([...])` in-process would leave that configuration to every later
test: handlers bound to a capture that is closed by then, levels that depend on test order.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

_FLAGS = ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing")


@dataclass(frozen=True)
class LoggingState:
    handlers: tuple[logging.Handler, ...]
    root_level: int
    levels: tuple[tuple[str, int], ...]
    """Every named logger's own level; a logger made later had none (NOTSET)."""
    flags: tuple[Any, ...]

    @classmethod
    def now(cls) -> LoggingState:
        root = logging.getLogger()
        return cls(
            handlers=tuple(root.handlers),
            root_level=root.level,
            levels=tuple(sorted((name, logger.level) for name, logger in _loggers())),
            flags=tuple(getattr(logging, flag) for flag in _FLAGS),
        )

    def restore(self, keep: Callable[[logging.Handler], bool] = lambda _: False) -> None:
        """Back to this state; current root handlers that `keep` accepts stay too."""
        root = logging.getLogger()
        kept = [h for h in root.handlers if keep(h) and h not in self.handlers]
        root.handlers[:] = [*self.handlers, *kept]
        root.setLevel(self.root_level)
        levels = dict(self.levels)
        for name, logger in _loggers():
            if logger.level != levels.get(name, logging.NOTSET):
                logger.setLevel(levels.get(name, logging.NOTSET))
        for flag, value in zip(_FLAGS, self.flags, strict=True):
            setattr(logging, flag, value)


def _loggers() -> list[tuple[str, logging.Logger]]:
    return [
        (name, logger)
        for name, logger in list(logging.root.manager.loggerDict.items())
        if isinstance(logger, logging.Logger)
    ]


@contextlib.contextmanager
def preserved_logging() -> Iterator[LoggingState]:
    """The logging state on entry, restored on exit whatever the body configured."""
    state = LoggingState.now()
    try:
        yield state
    finally:
        state.restore()
