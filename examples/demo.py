"""`make demo`: the webhook and the scheduler extender running locally, on real TLS and HTTP.

1. Generates a CA and serving certificate into ./demo-certs (or the folder DEMO_DIR names) and
   starts `kube-rdma webhook` with the example profiles; sends it a PyTorchJob worker's
   AdmissionReview and shows the JSON patch that makes the pod RDMA-ready.
2. Starts `kube-rdma extender` on a twelve-node cluster whose nodes differ as real ones do
   (examples/demo_cluster.py; two publish their devices through DRA), with that job's four pods
   pending: explains one, then makes kube-scheduler's calls, which plan the gang whole and bind
   its pods together.
3. Places a 4-GPU pod after the job, where bin-packing wants it.
4. Keeps both serving (Ctrl-C stops them) and prints how to call them. DEMO_ONESHOT=1 stops
   them after step 3 and prints how to start them by hand.
5. Prints three commands to try next on the shipped samples: `kube-rdma validate`, `diagnose`
   and `simulate` (on the demo's cluster).

It needs kube-rdma's runtime dependencies only (`make demo` installs them with `pip install -e .`):
the JSON patch is applied here, not with a test library.

Ports: free ones, which each service picks and logs, unless DEMO_PORT (webhook) or
DEMO_EXTENDER_PORT name them; a named port that is taken is said so, by name. The services'
logs go to demo-certs/*.log; the demo goes on once a service's /healthz answers.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from examples.demo_cluster import write_cluster
from examples.demo_scheduling import Scheduler, gang_step, single_step
from kube_rdma.core.listen import listening_socket
from kube_rdma.core.objects import Json
from testbed.net import healthy

ROOT = Path(__file__).resolve().parent.parent
CERTS = Path(os.environ.get("DEMO_DIR") or ROOT / "demo-certs").resolve()
EXAMPLES = ROOT / "examples"
REVIEW = EXAMPLES / "pytorchjob-worker-review.json"
LISTENING = re.compile(r"listening on (?P<scheme>https?)://[^:]+:(?P<port>\d+)")


def shown(path: Path) -> Path:
    """`path` as the user typed from the checkout: relative where it lies inside it."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def kube_rdma(*args: str) -> list[str]:
    return [sys.executable, "-m", "kube_rdma_cli", *args]


def port_from(variable: str) -> int:
    """The port `variable` names, checked free; 0 (the service picks one) when it names none.

    The check binds as the services do, with SO_REUSEADDR: a port whose last connections are
    still in TIME_WAIT (the demo just stopped with Ctrl-C) is free to them, and so to it.
    """
    given = os.environ.get(variable, "")
    if not given:
        return 0
    if not given.isdigit() or not 0 < int(given) < 65536:
        raise SystemExit(f"demo: {variable}={given!r} is not a port number (1-65535)")
    try:
        listening_socket("127.0.0.1", int(given)).close()
    except OSError:
        raise SystemExit(
            f"demo: port {given} ({variable}) is taken by another process; stop it, set "
            f"{variable} to another port, or unset it to let the demo pick a free one"
        ) from None
    return int(given)


def start(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    """A kube-rdma service, its log in the demo's folder as NAME.log."""
    log = CERTS / f"{name}.log"
    with log.open("wb") as out:
        return subprocess.Popen(kube_rdma(*args), cwd=ROOT, stderr=out, stdout=out), log


def wait_until_serving(
    process: subprocess.Popen[bytes], log: Path, context: ssl.SSLContext | None = None
) -> int:
    """The port the service listens on, once its log says so and its /healthz answers.

    A TCP connect is no proof: on a loaded machine a connect to a free port in the ephemeral
    range can succeed by itself (a TCP self-connect), before the service listens.
    """
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            raise SystemExit("demo: a kube-rdma service stopped:\n  " + "\n  ".join(tail))
        said = LISTENING.search(log.read_text(errors="replace"))
        if said and healthy(f"{said['scheme']}://localhost:{said['port']}", context):
            return int(said["port"])
        time.sleep(0.1)
    raise SystemExit(f"demo: a kube-rdma service did not start within 60s; see {log}")


def webhook_step(port: int) -> Json:
    """Review the example pod; the pod as the apiserver would store it."""
    context = ssl.create_default_context(cafile=str(CERTS / "ca.crt"))
    review = json.loads(REVIEW.read_text())
    request = urllib.request.Request(
        f"https://localhost:{port}/mutate",
        data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        answer = json.loads(response.read())["response"]
    patch = json.loads(base64.b64decode(answer["patch"]))
    print(f"\n1. webhook: {REVIEW.relative_to(ROOT)} -> allowed={answer['allowed']}, JSON patch:")
    for op in patch:
        print("     " + json.dumps(op))
    for warning in answer.get("warnings", []):
        print(f"     warning: {warning}")
    return apply_patch(review["request"]["object"], patch)


def apply_patch(document: Json, patch: list[Json]) -> Json:
    """`document` with the webhook's JSON patch applied: the add, replace and remove operations
    it writes (webhook/patch.py), "-" appending to a list."""
    result: Json = copy.deepcopy(document)
    for op in patch:
        *parents, last = [
            part.replace("~1", "/").replace("~0", "~") for part in op["path"].split("/")[1:]
        ]
        target: Any = result
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            index = len(target) if last == "-" else int(last)
            if op["op"] == "add":
                target.insert(index, op["value"])
            elif op["op"] == "replace":
                target[index] = op["value"]
            else:
                del target[index]
        elif op["op"] == "remove":
            del target[last]
        else:
            target[last] = op["value"]
    return result


def certificates() -> None:
    subprocess.run(
        kube_rdma("certs", "generate", "--service", "kube-rdma-webhook", "--namespace", "kube-rdma",
                  "--out", str(CERTS), "--localhost", "--force"),
        check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    print(f"certificates: {shown(CERTS)}/{{ca.crt,tls.crt,tls.key}}")


# The patch comes base64-encoded in the AdmissionReview's response: this prints it decoded, one
# operation a line, as step 1 shows it.
DECODE = (
    "python3 -c 'import base64, json, sys; [print(json.dumps(op)) for op in "
    'json.loads(base64.b64decode(json.load(sys.stdin)["response"]["patch"]))]\''
)


def closing(webhook_port: int, extender_port: int, *, oneshot: bool) -> str:
    """What to do next: call the services (or, one-shot, start them), then try the samples."""
    certs = shown(CERTS)
    review = REVIEW.relative_to(ROOT)
    extender = f"http://127.0.0.1:{extender_port}"
    calls = (
        f"  curl -s --cacert {certs}/ca.crt -H 'Content-Type: application/json' "
        f"--data @{review} https://localhost:{webhook_port}/mutate | {DECODE}\n"
        f"  kube-rdma explain ml-training/finetune-0 --url {extender}\n"
    )
    if oneshot:
        head = (
            f"\n4. Stopped both services (DEMO_ONESHOT=1); logs in {certs}/*.log. `make demo` "
            "keeps them serving; or start them yourself, each in its own terminal:\n"
            f"  kube-rdma webhook --tls-cert-file {certs}/tls.crt --tls-key-file "
            f"{certs}/tls.key --profiles {shown(EXAMPLES / 'profiles.yaml')} "
            f"--namespaces-file {shown(EXAMPLES / 'namespaces.yaml')} --host 127.0.0.1 "
            f"--port {webhook_port}\n"
            f"  kube-rdma extender --cluster-snapshot {certs}/cluster.json --host 127.0.0.1 "
            f"--port {extender_port}\n"
            "and call them (the patch decoded):\n"
        )
    else:
        head = (
            f"\n4. Serving: webhook https://localhost:{webhook_port}/mutate, extender "
            f"{extender}/{{filter,prioritize,bind,explain}}; logs in {certs}/*.log. "
            "Try (the patch decoded):\n"
        )
    samples = (
        "\n5. Next, on the shipped samples (`kube-rdma` is .venv/bin/kube-rdma; "
        "`. .venv/bin/activate` puts it on PATH):\n"
        "  kube-rdma validate weights examples/weights.yaml\n"
        "  kube-rdma diagnose examples/nccl-logs/socket-fallback.log\n"
        f"  kube-rdma simulate --cluster {certs}/cluster.json --workload examples/workload.yaml\n"
    )
    return head + calls + samples


def run(processes: list[subprocess.Popen[bytes]]) -> int:
    asked = port_from("DEMO_PORT"), port_from("DEMO_EXTENDER_PORT")
    webhook_port, extender_port = asked
    CERTS.mkdir(parents=True, exist_ok=True)
    certificates()
    webhook, log = start(
        "webhook", "webhook", "--tls-cert-file", str(CERTS / "tls.crt"),
        "--tls-key-file", str(CERTS / "tls.key"), "--port", str(webhook_port),
        "--host", "127.0.0.1", "--profiles", str(EXAMPLES / "profiles.yaml"),
        "--namespaces-file", str(EXAMPLES / "namespaces.yaml"),
    )  # fmt: skip
    processes.append(webhook)
    trust = ssl.create_default_context(cafile=str(CERTS / "ca.crt"))
    webhook_port = wait_until_serving(webhook, log, trust)
    pod = webhook_step(webhook_port)
    snapshot = CERTS / "cluster.json"
    nodes = write_cluster(pod, snapshot)
    extender, log = start(
        "extender", "extender", "--cluster-snapshot", str(snapshot), "--host", "127.0.0.1",
        "--port", str(extender_port),
    )  # fmt: skip
    processes.append(extender)
    extender_port = wait_until_serving(extender, log)
    pods = {o["metadata"]["name"]: o for o in _items(snapshot) if o["kind"] == "Pod"}
    scheduler = Scheduler(f"http://127.0.0.1:{extender_port}", pods, nodes)
    gang_step(scheduler)
    single_step(scheduler)
    oneshot = bool(os.environ.get("DEMO_ONESHOT"))
    if oneshot:
        stop(processes)
        # Started by hand, on the ports asked for or the services' own defaults.
        webhook_port, extender_port = asked[0] or 8443, asked[1] or 8888
    print(closing(webhook_port, extender_port, oneshot=oneshot), end="")
    if oneshot:
        return 0
    print("Ctrl-C stops them.")
    return int(webhook.wait())


def _items(snapshot: Path) -> list[Json]:
    items: list[Json] = json.loads(snapshot.read_bytes())["items"]
    return items


def main() -> int:
    processes: list[subprocess.Popen[bytes]] = []
    try:
        return run(processes)
    except KeyboardInterrupt:
        return 0
    finally:
        stop(processes)


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
