"""`kube-rdma diagnose POD` finds its kubeconfig and namespace as kubectl does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import orjson
import pytest

from kube_rdma_cli.dispatch import main
from testbed.builders.nodes import pod
from testbed.fakeapi import FakeApiServer, kubeconfig


async def test_the_command_reads_kubeconfig_and_namespace_as_kubectl(
    fake_api: FakeApiServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`kube-rdma diagnose NAME` with $KUBECONFIG only: -n, else the context's namespace."""
    fake_api.create("pods", pod("worker-0"), "team-a")
    document = kubeconfig(fake_api.host)
    document["contexts"][0]["context"]["namespace"] = "team-a"
    path = tmp_path / "config"
    path.write_bytes(orjson.dumps(document))
    monkeypatch.setenv("KUBECONFIG", str(path))
    for argv in (["worker-0"], ["-n", "team-a", "worker-0"], ["team-a/worker-0"]):
        # The command runs its own event loop: in a thread of its own, beside the test's.
        assert await asyncio.to_thread(main, ["diagnose", *argv, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["pod"] == "team-a/worker-0"
    assert await asyncio.to_thread(main, ["diagnose", "-n", "default", "worker-0"]) == 2
    assert "worker-0" in capsys.readouterr().err
