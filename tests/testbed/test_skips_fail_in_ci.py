"""Under CI=true a skipped test fails with its reason; elsewhere it stays a skip."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = """
import pytest

@pytest.mark.skipif(True, reason="kubectl is not installed")
def test_needs_kubectl():
    pass

def test_skips_itself():
    pytest.skip("needs a package index")

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False

def test_runs():
    pass
"""


@pytest.mark.parametrize(
    ("ci", "outcomes"),
    [
        # A skip marker skips at set-up, so it fails there: pytest counts that as an error.
        ("true", {"passed": 1, "errors": 1, "failed": 1, "xfailed": 1}),
        ("", {"passed": 1, "skipped": 2, "xfailed": 1}),
    ],
)
def test_skips_are_failures_only_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str, outcomes: dict[str, int]
) -> None:
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(SUITE)
    result = pytester.runpytest_subprocess("-p", "testbed.skips_fail_in_ci", "-rfE")
    result.assert_outcomes(**outcomes)
    assert result.ret == (1 if ci else 0)
    if ci:
        for line in (
            "ERROR *::test_needs_kubectl - skipped under CI=true, where every test must run:"
            " kubectl is not installed",
            "FAILED *::test_skips_itself - skipped under CI=true, where every test must run:"
            " needs a package index",
        ):
            result.stdout.fnmatch_lines([line])
