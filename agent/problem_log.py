"""Say what a scan could not read once, when it starts, and once more when it is over.

A file that cannot be read stays unreadable scan after scan; logging it every 30 seconds would
bury everything else the agent says. The log keeps the problems of the last scan and writes a
warning for each new one and a line for each that went away.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable


class ProblemLog:
    def __init__(self, log: logging.Logger, node: str) -> None:
        self._log = log
        self._node = node
        self._open: dict[str, None] = {}

    def report(self, problems: Iterable[str]) -> None:
        """The problems of this scan (none: a clean scan)."""
        current = dict.fromkeys(problems)
        extra = {"node": self._node}
        for problem in (p for p in current if p not in self._open):
            self._log.warning("scan: %s", problem, extra=extra)
        for problem in (p for p in self._open if p not in current):
            self._log.info("scan no longer: %s", problem, extra=extra)
        self._open = current
