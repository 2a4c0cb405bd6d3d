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
