"""`kube-rdma snapshot` finds its kubeconfig as kubectl does (kube_rdma/kube/kubeconfig.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kube_rdma_cli.dispatch import main
from kubesim.simulate.cluster import load_cluster
from testbed.builders.nodes import hgx, node, pod
from testbed.fakeapi import FakeApiServer


async def test_kubeconfig_comes_from_the_environment_as_for_kubectl(
    fake_api: FakeApiServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """No --kubeconfig: $KUBECONFIG (a list, the first file missing), as kubectl reads it."""
    fake_api.create("nodes", node("gpu-1", hgx()))
    fake_api.create("pods", pod("trainer-0", node_name="gpu-1", phase="Running"))
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{kubeconfig}")
    out = tmp_path / "snapshot.json"
    # The command runs its own event loop: in a thread of its own, beside the test's.
    assert await asyncio.to_thread(main, ["snapshot", "--out", str(out)]) == 0
    assert [n["metadata"]["name"] for n in load_cluster(out).nodes] == ["gpu-1"]
    assert capfd.readouterr().err.splitlines()[-1] == (
        f"wrote 2 objects to {out} (read with kubeconfig {kubeconfig} (from KUBECONFIG), "
        "context fake-apiserver)"
    )
    status = await asyncio.to_thread(main, ["snapshot", "--out", str(out), "--context", "prod"])
    assert status == 2
    assert capfd.readouterr().err.splitlines()[-1] == (
        f"kube-rdma snapshot: {kubeconfig} has no context 'prod' (--context); known: fake-apiserver"
    )
