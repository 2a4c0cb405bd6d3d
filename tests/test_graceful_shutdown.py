"""SIGTERM to the real `kube-rdma webhook` and `kube-rdma extender` processes while a request is
being handled: the port closes at once, the request is still answered, and the process exits 0
well within the terminationGracePeriodSeconds of its manifest.

The webhook's review is held up by a Namespace lookup to an apiserver that answers after a
second; the extender's by a gang member's bind waiting at the barrier for the rest of its gang.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import orjson
import yaml
from aiohttp import web

from kube_rdma.core import keys
from testbed.builders import nodes, pods
from testbed.fakeapi.kubeconfig import kubeconfig
from testbed.net import listening
from testbed.processes import Child, ChildOutput

REPO = Path(__file__).resolve().parents[1]
TOKEN = "test-token-6f1c0d9e2b7a"
LOOKUP_SECONDS = 1.0


def grace_seconds(manifest: str) -> int:
    deployment = yaml.safe_load((REPO / manifest).read_text())
    seconds: int = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    return seconds


@asynccontextmanager
async def slow_apiserver() -> AsyncIterator[str]:
    """An apiserver with no Namespaces listed, where reading one takes LOOKUP_SECONDS."""

    async def namespaces(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") not in (None, "false", "0"):
            response = web.StreamResponse()
            await response.prepare(request)
            await asyncio.sleep(3600)
            return response
        return web.json_response(
            {"kind": "NamespaceList", "metadata": {"resourceVersion": "1"}, "items": []}
        )

    async def namespace(request: web.Request) -> web.Response:
        await asyncio.sleep(LOOKUP_SECONDS)
        name = request.match_info["name"]
        return web.json_response({"kind": "Namespace", "metadata": {"name": name}})

    app = web.Application()
    app.router.add_get("/api/v1/namespaces", namespaces)
    app.router.add_get("/api/v1/namespaces/{name}", namespace)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextmanager
def running(args: list[str]) -> Iterator[tuple[subprocess.Popen[str], ChildOutput, int]]:
    """The command on a port it picked, once its "listening on" line says which."""
    argv = [sys.executable, "-m", "kube_rdma_cli", *args, "--host", "127.0.0.1", "--port", "0"]
    with Child(argv, cwd=REPO) as child:
        port = int(child.stderr.wait_for(r"listening on https?://127\.0\.0\.1:(\d+)")[1])
        yield child.process, child.stderr, port


def send(conn: socket.socket, path: str, body: bytes) -> None:
    head = f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n\r\n"
    conn.sendall(head.encode() + body)


def terminate_while_in_flight(
    process: subprocess.Popen[str], port: int, conn: socket.socket, grace: int
) -> bytes:
    """SIGTERM while `conn`'s request is handled; the answer, after checking that the port
    closed at once and the process exited 0 within its grace period."""
    conn.settimeout(0.5)
    try:
        early = conn.recv(1)
    except TimeoutError:
        early = b""
    assert early == b"", "answered before SIGTERM: nothing was in flight"
    process.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    while listening(port) and time.monotonic() < stopped + 2:
        time.sleep(0.02)
    assert not listening(port), "still accepting connections after SIGTERM"
    conn.settimeout(10)
    answer = conn.makefile("rb").readline()
    assert process.wait(timeout=grace) == 0
    return answer


async def test_webhook_answers_the_review_in_flight(cert_dir: Path, tmp_path: Path) -> None:
    async with slow_apiserver() as server:
        config = kubeconfig(server)
        config["users"][0]["user"]["token"] = TOKEN
        (tmp_path / "kubeconfig").write_bytes(orjson.dumps(config))
        tls = [
            "--tls-cert-file",
            str(cert_dir / "tls.crt"),
            "--tls-key-file",
            str(cert_dir / "tls.key"),
        ]
        args = ["webhook", *tls, "--kubeconfig", str(tmp_path / "kubeconfig")]
        with running(args) as (process, stderr, port):
            client = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
            raw = socket.create_connection(("127.0.0.1", port))
            conn = client.wrap_socket(raw, server_hostname="localhost")
            pod = pods.pytorchjob("worker", 0, "new-team", {keys.INJECT: "true"})
            review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
            send(conn, "/mutate", orjson.dumps({**review, "request": pods.request(pod)}))
            grace = grace_seconds("manifests/webhook/deployment.yaml")
            status = await asyncio.to_thread(terminate_while_in_flight, process, port, conn, grace)
            logs = stderr.close()
    assert status == b"HTTP/1.1 200 OK\r\n"
    assert '"msg":"webhook stopped"' in logs
    assert TOKEN not in logs


def test_extender_answers_the_bind_in_flight(tmp_path: Path) -> None:
    gang = {keys.GANG: "g", keys.GANG_SIZE: "2"}
    members = [nodes.pod(f"w-{i}", annotations=gang) for i in range(2)]
    for member in members:
        member["spec"]["schedulerName"] = "rdma-scheduler"  # the extender binds only its own pods
    cluster = [nodes.node(n, nodes.hgx()) for n in ("gpu-1", "gpu-2")] + members
    (tmp_path / "cluster.json").write_bytes(orjson.dumps({"kind": "List", "items": cluster}))
    args = ["extender", "--cluster-snapshot", str(tmp_path / "cluster.json")]
    with running(args) as (process, _, port):
        with socket.create_connection(("127.0.0.1", port)) as first:
            send(first, "/filter", orjson.dumps({"Pod": members[0], "NodeNames": ["gpu-1"]}))
            assert first.makefile("rb").readline() == b"HTTP/1.1 200 OK\r\n"
        conn = socket.create_connection(("127.0.0.1", port))
        binding = {"PodName": "w-0", "PodNamespace": "team-a", "PodUID": "uid-w-0", "Node": "gpu-1"}
        send(conn, "/bind", orjson.dumps(binding))
        grace = grace_seconds("manifests/scheduler/deployment.yaml")
        assert terminate_while_in_flight(process, port, conn, grace) == b"HTTP/1.1 200 OK\r\n"
