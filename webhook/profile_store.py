"""The profile file, kept loaded with the last good version on a bad reload.

A profile that loads but works only on some hardware carries load-time warnings: each load logs
them (one line per warning, naming the profile) and hands them to `on_warnings`, which the app
turns into the `kube_rdma_profile_warnings` gauge, so they stay visible after the log scrolls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from kube_rdma.core.config_file import WatchedFile
from webhook.profiles import BUILTIN, ProfileSet, parse_profiles

log = logging.getLogger("kube_rdma.webhook")

Warnings = Mapping[str, tuple[str, ...]]


class ProfileStore(WatchedFile[ProfileSet]):
    """The profiles in force; `current` is always a valid ProfileSet."""

    def __init__(
        self,
        path: Path | None,
        on_reload: Callable[[str], None] = lambda result: None,
        on_warnings: Callable[[Warnings], None] = lambda warnings: None,
    ) -> None:
        self._on_warnings = on_warnings
        super().__init__(path, self._parse, BUILTIN, "profiles", on_reload)

    def _parse(self, text: str, source: str) -> ProfileSet:
        profiles = parse_profiles(text, source)
        warnings = profiles.load_warnings()
        for name, messages in warnings.items():
            for message in messages:
                log.warning("%s: profile %s: %s", source, name, message, extra={"profile": name})
        self._on_warnings(warnings)
        return profiles

    @property
    def warnings(self) -> Warnings:
        """The load-time warnings of the profiles in force."""
        return self.current.load_warnings()
