"""JSON log lines go to the stderr of the moment, with the record's `extra` keys."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from kube_rdma.core import logs


def test_lines_follow_a_swapped_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    logs.configure("info")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("kube_rdma.test").info("scanned", extra={"node": "gpu-1"})
    entry = json.loads(second.getvalue())
    assert {k: entry[k] for k in ("level", "logger", "msg", "node")} == {
        "level": "info",
        "logger": "kube_rdma.test",
        "msg": "scanned",
        "node": "gpu-1",
    }


def test_the_level_is_the_one_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    logs.configure("warning")
    logging.getLogger("kube_rdma.test").info("hidden")
    logging.getLogger("kube_rdma.test").warning("shown")
    assert [json.loads(line)["msg"] for line in out.getvalue().splitlines()] == ["shown"]
    assert logging.getLogger().level == logging.WARNING
    assert logging.getLogger("aiohttp.access").level == logging.WARNING


def test_a_long_message_and_long_fields_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A message quoting what a client sent cannot grow a log line without bound."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    logs.configure("info")
    huge = "é" * 100_000  # two bytes each in UTF-8
    logging.getLogger("kube_rdma.test").warning("denied: %s", huge, extra={"pod": huge, "n": 7})
    entry = json.loads(out.getvalue())
    assert entry["msg"].startswith("denied: éé")
    assert entry["msg"].endswith("…(truncated)")
    assert len(entry["msg"].encode()) <= logs.MESSAGE_LIMIT
    assert entry["pod"].endswith("…(truncated)")
    assert len(entry["pod"].encode()) <= logs.FIELD_LIMIT
    assert entry["n"] == 7
    assert len(out.getvalue()) < 8 * 1024


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, "short"),
        ("x" * 10, 10, "x" * 10),
        ("x" * 11, 20, "x" * 11),
        ("x" * 30, 20, "xxxxxx…(truncated)"),  # the marker is 14 bytes
        ("é" * 30, 20, "ééé…(truncated)"),
        ("é" * 30, 21, "ééé…(truncated)"),  # never half a character
        ("x" * 30, 5, "…(truncated)"),  # below the marker's size: the marker alone
    ],
)
def test_cap(text: str, limit: int, expected: str) -> None:
    assert logs.cap(text, limit) == expected
