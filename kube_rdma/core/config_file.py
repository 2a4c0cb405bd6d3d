"""An admin's config file, kept loaded: the last good version stays when a new one is bad.

Both services read one (the webhook its profiles, the extender its weights). Kubelet updates a
mounted ConfigMap by swapping a symlink, so the file is checked by content rather than by
inotify or mtime: reading a few kilobytes every couple of seconds is cheap and sees every kind of
update. A file that is invalid at start-up raises (the process exits with the message); on
reload it is logged and counted once per distinct bad content, and the previous config stays.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class ConfigError(Exception):
    """A config file that cannot be used; the message says where and why."""


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from e


class WatchedFile(Generic[T]):
    """`current` is always a valid config: the file's, or `default` when there is no file."""

    def __init__(
        self,
        path: Path | None,
        parse: Callable[[str, str], T],
        default: T,
        what: str,
        on_reload: Callable[[str], None] = lambda result: None,
    ) -> None:
        self.path = path
        self._parse = parse
        self._what = what
        self._on_reload = on_reload
        self._digest = ""
        self.current: T = default
        self.last_error: str | None = None
        if path is not None:
            text = read_text(path)
            self.current = parse(text, str(path))
            self._digest = _digest(text)

    def check(self) -> bool:
        """Reload when the file changed; True when a new config was taken."""
        if self.path is None:
            return False
        try:
            text = read_text(self.path)
            if _digest(text) == self._digest:
                return False
            self._digest = _digest(text)
            self.current = self._parse(text, str(self.path))
        except ConfigError as e:
            if str(e) != self.last_error:
                log.error(
                    "%s reload rejected, keeping the last good %s: %s", self._what, self._what, e
                )
                self._on_reload("rejected")
            self.last_error = str(e)
            return False
        self.last_error = None
        log.info("%s reloaded from %s", self._what, self.path)
        self._on_reload("loaded")
        return True

    async def watch(self, interval: float) -> None:
        """Check every `interval` seconds; nothing a file holds may end the loop."""
        while True:
            await asyncio.sleep(interval)
            try:
                self.check()
            except Exception:
                log.exception(
                    "%s reload failed unexpectedly; keeping the last good one", self._what
                )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
