"""A pytest plugin: under CI=true a skipped test is a failed one.

A test that skips where a tool is missing (kubectl for the kustomize builds, a package index for
the image's lock) passes silently on a machine without it; in CI that would prove nothing while
reading green. There every skip fails, with the reason it gave.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        reason = str(reason).removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where every test must run: {reason}"
    return report
