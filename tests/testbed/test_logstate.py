"""An in-process `kube-rdma` call leaves the logging module as it found it, once restored."""

from __future__ import annotations

import logging
from pathlib import Path

from kube_rdma.cli import main
from testbed.logstate import LoggingState, preserved_logging


def test_main_in_process_changes_nothing_for_later_tests(tmp_path: Path) -> None:
    before = LoggingState.now()
    with preserved_logging():
        assert (
            main(
                [
                    "--log-level",
                    "debug",
                    "certs",
                    "generate",
                    "--service",
                    "s",
                    "--namespace",
                    "n",
                    "--out",
                    str(tmp_path),
                ]
            )
            == 0
        )
        assert logging.getLogger().level == logging.DEBUG
        assert logging._srcfile is None  # type: ignore[attr-defined]
    assert LoggingState.now() == before
    assert logging._srcfile is not None  # type: ignore[attr-defined]


def test_the_autouse_fixture_started_this_test_unconfigured() -> None:
    """The test before, in this module, configured logging; this one sees pytest's own setup."""
    root = logging.getLogger()
    assert logging._srcfile is not None  # type: ignore[attr-defined]
    assert not [h for h in root.handlers if type(h).__name__ == "StderrHandler"]
