"""`make demo`: the webhook running locally over real TLS, and how to call it.

It generates a CA and serving certificate into ./demo-certs, starts `kube-rdma webhook` with the
example profiles and namespaces, sends it the example PyTorchJob worker review, prints the JSON
patch it answers with, then keeps serving (Ctrl-C stops it) and prints a curl line to try more.
With DEMO_ONESHOT=1 it stops after the first review.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CERTS = ROOT / "demo-certs"
EXAMPLES = ROOT / "examples"
REVIEW = EXAMPLES / "pytorchjob-worker-review.json"


def kube_rdma(*args: str) -> list[str]:
    return [sys.executable, "-m", "webhook.cli", *args]


def wait_until_serving(port: int, process: subprocess.Popen[bytes], seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the webhook exited with code {process.returncode}; see above")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the webhook did not listen on port {port} within {seconds:.0f}s")


def call(port: int) -> dict[str, object]:
    context = ssl.create_default_context(cafile=str(CERTS / "ca.crt"))
    request = urllib.request.Request(
        f"https://localhost:{port}/mutate",
        data=REVIEW.read_bytes(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        answer: dict[str, object] = json.loads(response.read())["response"]
        return answer


def main() -> int:
    port = int(os.environ.get("DEMO_PORT", "8443"))
    subprocess.run(
        kube_rdma(
            "certs",
            "generate",
            "--service",
            "kube-rdma-webhook",
            "--namespace",
            "kube-rdma",
            "--out",
            str(CERTS),
            "--localhost",
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"certificates: {CERTS}/{{ca.crt,tls.crt,tls.key}}")
    process = subprocess.Popen(
        kube_rdma(
            "webhook",
            "--tls-cert-file",
            str(CERTS / "tls.crt"),
            "--tls-key-file",
            str(CERTS / "tls.key"),
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            "--profiles",
            str(EXAMPLES / "profiles.yaml"),
            "--namespaces-file",
            str(EXAMPLES / "namespaces.yaml"),
        ),
        cwd=ROOT,
    )
    try:
        wait_until_serving(port, process)
        answer = call(port)
        patch = json.loads(base64.b64decode(str(answer["patch"])))
        print(f"\n{REVIEW.relative_to(ROOT)} -> allowed={answer['allowed']}, JSON patch:")
        for op in patch:
            print("  " + json.dumps(op))
        for warning in answer.get("warnings", []) or []:  # type: ignore[attr-defined]
            print(f"  warning: {warning}")
        print(
            f"\nThe webhook serves https://localhost:{port}/mutate (also /healthz, /readyz, "
            "/metrics). Try:\n"
            f"  curl --cacert {CERTS.relative_to(ROOT)}/ca.crt -H 'Content-Type: application/json' "
            f"--data @{REVIEW.relative_to(ROOT)} https://localhost:{port}/mutate\n"
        )
        if os.environ.get("DEMO_ONESHOT"):
            return 0
        print("Ctrl-C stops it.")
        process.wait()
        return process.returncode
    except KeyboardInterrupt:
        return 0
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
