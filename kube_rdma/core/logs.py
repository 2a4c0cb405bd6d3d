"""One JSON object per log line, with constant keys, for every kube-rdma process."""

from __future__ import annotations

import datetime as dt
import logging
import sys
from typing import Any

import orjson

TRUNCATED = "…(truncated)"
MESSAGE_LIMIT = 4096
"""Bytes (UTF-8) of a log line's message at most: a message that quotes what a client sent (a
pod's annotation, a request body) cannot grow a line without bound."""
FIELD_LIMIT = 1024
"""Bytes of each string passed through `extra=` at most."""


def cap(text: str, limit: int) -> str:
    """`text` cut to at most `limit` bytes of UTF-8 (`limit` no less than TRUNCATED's 14),
    ending in TRUNCATED when it was cut, never in the middle of a character."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    room = max(0, limit - len(TRUNCATED.encode()))
    return encoded[:room].decode(errors="ignore") + TRUNCATED


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
            "msg": cap(record.getMessage(), MESSAGE_LIMIT),
        }
        entry.update(
            (k, cap(v, FIELD_LIMIT) if isinstance(v, str) else v)
            for k, v in record.__dict__.items()
            if k not in _STANDARD
        )
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
