"""One JSON object per log line, with constant keys, for every kube-rdma process."""

from __future__ import annotations

import datetime as dt
import logging
import sys
from typing import Any

import orjson

# Attributes every LogRecord has; anything else was passed through `extra=` and is logged.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update((k, v) for k, v in record.__dict__.items() if k not in _STANDARD)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a record is emitted, not when it was built.

    A process that swaps its stderr (pytest's capture, a daemon redirecting it) keeps its log
    lines instead of writing into a closed stream, as the logging module's own last-resort
    handler does.
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        pass


def configure(level: str = "info") -> None:
    # The lines carry none of the caller's file, thread or process, so the logging module need
    # not look them up for every record (walking the stack for the caller is the costliest).
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = StderrHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
