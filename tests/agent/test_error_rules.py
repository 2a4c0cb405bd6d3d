"""Error thresholds: their syntax, the defaults, and `agent run --error-threshold`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.error_rules import (
    DEFAULT_ERROR_RULES,
    ErrorRule,
    ErrorRuleError,
    error_rules,
    parse_error_threshold,
)
from kube_rdma_cli.dispatch import main

DOCS = Path(__file__).parents[2] / "docs" / "agent.md"
SYNTAX = (
    "expected COUNTER=RATE/WINDOW (errors per minute over a window like 30s, 5m or 1h) "
    "or COUNTER=off"
)
JUDGED = (
    "symbol_error, link_error_recovery, link_downed, port_rcv_errors, "
    "port_rcv_remote_physical_errors, local_link_integrity_errors, excessive_buffer_overrun_errors"
)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("symbol_error=10/5m", ("symbol_error", ErrorRule(10, 300))),
        ("link_downed=0/10m", ("link_downed", ErrorRule(0, 600))),
        ("port_rcv_errors=2.5/30s", ("port_rcv_errors", ErrorRule(2.5, 30))),
        ("link_error_recovery=1/1h", ("link_error_recovery", ErrorRule(1, 3600))),
        ("symbol_error=off", ("symbol_error", None)),
    ],
)
def test_thresholds_parse(text: str, parsed: tuple[str, ErrorRule | None]) -> None:
    assert parse_error_threshold(text) == parsed


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("symbol_error", f"'symbol_error': {SYNTAX}"),
        ("symbol_error=10", f"'symbol_error=10': {SYNTAX}"),
        ("symbol_error=10/5", f"'symbol_error=10/5': {SYNTAX}"),
        ("symbol_error=-1/5m", f"'symbol_error=-1/5m': {SYNTAX}"),
        ("symbol_error=ten/5m", f"'symbol_error=ten/5m': {SYNTAX}"),
        ("symbol_error=10/5d", f"'symbol_error=10/5d': {SYNTAX}"),
        ("symbol_error=10/0m", "'symbol_error=10/0m': the window must be longer than 0m"),
        (
            "symbol_eror=10/5m",
            f"'symbol_eror=10/5m': unknown counter 'symbol_eror', expected one of {JUDGED}",
        ),
        (
            "port_xmit_discards=1/5m",
            "'port_xmit_discards=1/5m': port_xmit_discards grows under normal congestion; "
            "it is information only",
        ),
        (
            "port_rcv_discards=off",
            "'port_rcv_discards=off': port_rcv_discards grows under normal congestion; "
            "it is information only",
        ),
    ],
)
def test_bad_thresholds_are_named(text: str, error: str) -> None:
    with pytest.raises(ErrorRuleError) as caught:
        parse_error_threshold(text)
    assert str(caught.value) == error


def test_overrides_apply_over_the_defaults_in_order() -> None:
    rules = error_rules(
        [
            ("symbol_error", ErrorRule(100, 60)),
            ("link_downed", None),
            ("port_rcv_errors", None),
            ("port_rcv_errors", ErrorRule(1, 60)),
        ]
    )
    assert dict(rules) == {
        "link_error_recovery": ErrorRule(0.5, 600),
        "symbol_error": ErrorRule(100, 60),
        "port_rcv_errors": ErrorRule(1, 60),
        "port_rcv_remote_physical_errors": ErrorRule(10, 300),
        "local_link_integrity_errors": ErrorRule(1, 300),
        "excessive_buffer_overrun_errors": ErrorRule(1, 300),
    }
    assert "link_downed" in DEFAULT_ERROR_RULES, "the defaults are left alone"


@pytest.mark.parametrize(
    ("rule", "text"),
    [(ErrorRule(10, 300), "10/5m"), (ErrorRule(0.5, 3600), "0.5/1h"), (ErrorRule(1, 90), "1/90s")],
)
def test_rules_print_as_written(rule: ErrorRule, text: str) -> None:
    assert str(rule) == text


def test_the_documented_defaults_are_the_defaults() -> None:
    rows = re.findall(r"^\| `(\w+)` \| `([\d./]+\w)` \|", DOCS.read_text(), re.MULTILINE)
    assert dict(rows) == {name: str(rule) for name, rule in DEFAULT_ERROR_RULES.items()}


def test_agent_run_exits_2_naming_the_bad_entry(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["agent", "run", "--node-name", "n", "--error-threshold", "symbol_error=10/5m"]
    with pytest.raises(SystemExit) as exited:
        main([*args, "--error-threshold", "link_downed=soon"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"kube-rdma agent run: error: argument --error-threshold: 'link_downed=soon': {SYNTAX}"
    )
