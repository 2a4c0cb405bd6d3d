"""`make demo`: the webhook and the scheduler extender running locally, on real TLS and HTTP.

1. Generates a CA and serving certificate into ./demo-certs and starts `kube-rdma webhook` with
   the example profiles; sends it a PyTorchJob worker's AdmissionReview and shows the JSON patch
   that makes the pod RDMA-ready.
2. Generates a 64-node GPU cluster (testbed/clustergen: rail faults, busy nodes), adds the
   patched pod to it as pending, and starts `kube-rdma extender` on that snapshot; runs filter,
   prioritize and bind for the pod as kube-scheduler would, and prints `kube-rdma explain`.
3. Keeps both serving (Ctrl-C stops them) and prints how to call them. DEMO_ONESHOT=1 stops
   after step 2.
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
from typing import Any

import jsonpatch

from kube_rdma.core.objects import Json
from testbed.clustergen import ClusterSpec, generate, write_snapshot

ROOT = Path(__file__).resolve().parent.parent
CERTS = ROOT / "demo-certs"
EXAMPLES = ROOT / "examples"
REVIEW = EXAMPLES / "pytorchjob-worker-review.json"


def kube_rdma(*args: str) -> list[str]:
    return [sys.executable, "-m", "kube_rdma.cli", *args]


def wait_until_serving(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"a kube-rdma process exited with code {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listened on port {port} within {seconds:.0f}s")


def call(url: str, body: Json | None = None, context: ssl.SSLContext | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        text = response.read().decode()
    return json.loads(text) if text.lstrip().startswith(("{", "[")) else text


def webhook_step(port: int) -> Json:
    """Review the example pod; the pod as the apiserver would store it."""
    context = ssl.create_default_context(cafile=str(CERTS / "ca.crt"))
    review = json.loads(REVIEW.read_text())
    answer = call(f"https://localhost:{port}/mutate", review, context)["response"]
    patch = json.loads(base64.b64decode(answer["patch"]))
    print(f"\n1. webhook: {REVIEW.relative_to(ROOT)} -> allowed={answer['allowed']}, JSON patch:")
    for op in patch:
        print("     " + json.dumps(op))
    for warning in answer.get("warnings", []):
        print(f"     warning: {warning}")
    pod: Json = jsonpatch.apply_patch(review["request"]["object"], patch)
    return pod


def extender_step(port: int, pod: Json, nodes: list[str]) -> None:
    base = f"http://127.0.0.1:{port}"
    meta = pod["metadata"]
    filtered = call(f"{base}/filter", {"Pod": pod, "NodeNames": nodes})
    print(
        f"\n2. extender: filter {meta['namespace']}/{meta['name']} over {len(nodes)} nodes: "
        f"{len(filtered['NodeNames'])} pass, {len(filtered['FailedNodes'])} busy, "
        f"{len(filtered['FailedAndUnresolvableNodes'])} unsuitable"
    )
    for node, reason in list(filtered["FailedAndUnresolvableNodes"].items())[:3]:
        print(f"     {node}: {reason}")
    scores = call(f"{base}/prioritize", {"Pod": pod, "NodeNames": filtered["NodeNames"]})
    if scores:
        best = max(scores, key=lambda s: (s["Score"], s["Host"]))
        args = {"PodName": meta["name"], "PodNamespace": meta["namespace"], "PodUID": ""}
        bound = call(f"{base}/bind", {**args, "Node": best["Host"]})
        print(f"   prioritize: best {best['Host']} (score {best['Score']}); bind -> {bound}")
    other = "llama-70b-worker-1"
    table = call(f"{base}/explain?namespace=ml-training&name={other}&format=table")
    print(f"\n   kube-rdma explain ml-training/{other} (first rows):")
    for line in str(table).splitlines()[:10]:
        print("     " + line)


def cluster_with(pod: Json) -> tuple[Path, list[str]]:
    spec = ClusterSpec(
        nodes=64,
        seed=3,
        nodes_per_leaf=16,
        leaves_per_spine=2,
        link_layer="mixed",
        rail_down_fraction=0.06,
        busy_fraction=0.4,
    )
    objects = generate(spec)
    second = json.loads(json.dumps(pod))
    second["metadata"]["name"] = "llama-70b-worker-1"
    objects += [pod, second]
    path = CERTS / "cluster.json"
    write_snapshot(objects, path)
    return path, [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]


def main() -> int:
    webhook_port = int(os.environ.get("DEMO_PORT", "8443"))
    extender_port = int(os.environ.get("DEMO_EXTENDER_PORT", str(webhook_port + 445)))
    subprocess.run(
        kube_rdma("certs", "generate", "--service", "kube-rdma-webhook", "--namespace", "kube-rdma",
                  "--out", str(CERTS), "--localhost", "--force"),
        check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    print(f"certificates: {CERTS.relative_to(ROOT)}/{{ca.crt,tls.crt,tls.key}}")
    quiet = {"stderr": subprocess.DEVNULL} if os.environ.get("DEMO_ONESHOT") else {}
    processes = [
        subprocess.Popen(
            kube_rdma("webhook", "--tls-cert-file", str(CERTS / "tls.crt"),
                      "--tls-key-file", str(CERTS / "tls.key"), "--port", str(webhook_port),
                      "--host", "127.0.0.1", "--profiles", str(EXAMPLES / "profiles.yaml"),
                      "--namespaces-file", str(EXAMPLES / "namespaces.yaml")),
            cwd=ROOT, **quiet,  # type: ignore[call-overload]
        )
    ]  # fmt: skip
    try:
        wait_until_serving(webhook_port, processes[0])
        pod = webhook_step(webhook_port)
        snapshot, nodes = cluster_with(pod)
        processes.append(
            subprocess.Popen(
                kube_rdma("extender", "--cluster-snapshot", str(snapshot), "--host", "127.0.0.1",
                          "--port", str(extender_port)),
                cwd=ROOT, **quiet,  # type: ignore[call-overload]
            )
        )  # fmt: skip
        wait_until_serving(extender_port, processes[1])
        extender_step(extender_port, pod, nodes)
        print(
            f"\n3. Serving: webhook https://localhost:{webhook_port}/mutate, extender "
            f"http://127.0.0.1:{extender_port}/{{filter,prioritize,bind,explain}}. Try:\n"
            f"  curl --cacert {CERTS.relative_to(ROOT)}/ca.crt -H 'Content-Type: application/json' "
            f"--data @{REVIEW.relative_to(ROOT)} https://localhost:{webhook_port}/mutate\n"
            f"  .venv/bin/kube-rdma explain ml-training/llama-70b-worker-1 "
            f"--url http://127.0.0.1:{extender_port}\n"
        )
        if os.environ.get("DEMO_ONESHOT"):
            return 0
        print("Ctrl-C stops them.")
        return int(processes[0].wait())
    except KeyboardInterrupt:
        return 0
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
