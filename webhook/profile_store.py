"""The profile file, kept loaded with the last good version on a bad reload."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kube_rdma.core.config_file import WatchedFile
from webhook.profiles import BUILTIN, ProfileSet, parse_profiles


class ProfileStore(WatchedFile[ProfileSet]):
    """The profiles in force; `current` is always a valid ProfileSet."""

    def __init__(
        self, path: Path | None, on_reload: Callable[[str], None] = lambda result: None
    ) -> None:
        super().__init__(path, parse_profiles, BUILTIN, "profiles", on_reload)
