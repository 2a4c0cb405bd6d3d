"""`make demo` works: certificates, the webhook over TLS patching an example review, and the
extender filtering, scoring, binding and explaining that pod on a generated cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testbed.net import free_port

ROOT = Path(__file__).resolve().parent.parent


def test_demo_runs_once_end_to_end() -> None:
    port, extender_port = free_port(), free_port()
    env = {
        **os.environ,
        "DEMO_ONESHOT": "1",
        "DEMO_PORT": str(port),
        "DEMO_EXTENDER_PORT": str(extender_port),
    }
    result = subprocess.run(
        [sys.executable, "-m", "examples.demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "1. webhook: examples/pytorchjob-worker-review.json -> allowed=True, JSON patch:" in out
    assert '{"op": "add", "path": "/spec/containers/0/securityContext", "value": ' in out
    assert "2. extender: filter ml-training/llama-70b-worker-0 over 64 nodes: " in out
    assert "bind -> {'Error': ''}" in out
    assert (
        "pod ml-training/llama-70b-worker-1: 8 GPUs, RDMA rdma/hca: 1, 8 rails, InfiniBand" in out
    )
    assert f"https://localhost:{port}/mutate" in out
