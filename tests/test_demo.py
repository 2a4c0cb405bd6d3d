"""`make demo` works: certificates, a live webhook over TLS, and a patched example review."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_runs_once_end_to_end() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DEMO_ONESHOT": "1", "DEMO_PORT": str(port)}
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
    assert "examples/pytorchjob-worker-review.json -> allowed=True, JSON patch:" in result.stdout
    assert '{"op": "add", "path": "/spec/containers/0/securityContext", "value": ' in result.stdout
    assert f"https://localhost:{port}/mutate" in result.stdout
