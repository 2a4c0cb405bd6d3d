"""An in-process `kube-rdma` call leaves the logging module as it found it, once restored."""

from __future__ import annotations

import logging
from pathlib import Path

from kube_rdma_cli.dispatch import main
from testbed.logstate import LoggingState, preserved_logging

GENERATE = ["certs", "generate", "--service", "s", "--namespace", "n"]


def test_main_in_process_changes_nothing_once_restored(tmp_path: Path) -> None:
    before = LoggingState.now()
    with preserved_logging():
        assert main(["--log-level", "debug", *GENERATE, "--out", str(tmp_path)]) == 0
        assert logging.getLogger().level == logging.DEBUG
        assert logging._srcfile is None
    assert LoggingState.now() == before
    assert logging._srcfile is not None


def test_main_configures_logging_for_its_process(tmp_path: Path) -> None:
    """Left configured on purpose: the next test checks that the autouse fixture undid it."""
    assert main(["--log-level", "debug", *GENERATE, "--out", str(tmp_path)]) == 0
    assert logging.getLogger().level == logging.DEBUG


def test_the_test_after_an_in_process_call_starts_unconfigured() -> None:
    root = logging.getLogger()
    assert logging._srcfile is not None
    assert root.level == logging.WARNING  # the logging module's default, not kube-rdma's choice
    assert [type(h).__name__ for h in root.handlers if type(h).__name__ == "StderrHandler"] == []
