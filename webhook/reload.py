"""Keeps the admin's profile file loaded, and the last good version when a new one is bad.

Kubelet updates a mounted ConfigMap by swapping a symlink, so the file is checked by content
rather than by inotify or mtime: reading a few kilobytes every couple of seconds is cheap and
sees every kind of update.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

from webhook.profiles import BUILTIN, ProfileError, ProfileSet, parse_profiles, read_profiles_file

log = logging.getLogger(__name__)


class ProfileStore:
    """The profiles in force; `current` is always a valid ProfileSet."""

    def __init__(
        self, path: Path | None, on_reload: Callable[[str], None] = lambda result: None
    ) -> None:
        self.path = path
        self._on_reload = on_reload
        self._digest = ""
        self.current: ProfileSet = BUILTIN
        self.last_error: str | None = None
        if path is not None:
            text = self._read()
            self.current = parse_profiles(text, str(path))
            self._digest = _digest(text)

    def _read(self) -> str:
        assert self.path is not None
        return read_profiles_file(self.path)

    def check(self) -> bool:
        """Reload when the file changed; True when new profiles were taken."""
        if self.path is None:
            return False
        try:
            text = self._read()
            if _digest(text) == self._digest:
                return False
            self._digest = _digest(text)
            self.current = parse_profiles(text, str(self.path))
        except ProfileError as e:
            if str(e) != self.last_error:
                log.error("profile reload rejected, keeping the last good profiles: %s", e)
                self._on_reload("rejected")
            self.last_error = str(e)
            return False
        self.last_error = None
        log.info("profiles reloaded from %s: %s", self.path, ", ".join(self.current.profiles))
        self._on_reload("loaded")
        return True

    async def watch(self, interval: float) -> None:
        """Check every `interval` seconds; nothing a file holds may end the loop."""
        while True:
            await asyncio.sleep(interval)
            try:
                self.check()
            except Exception:
                log.exception("profile reload failed unexpectedly; keeping the last good profiles")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
