"""Webhook throughput and latency: a realistic 8-GPU PyTorchJob pod review over TLS, against a
do-nothing TLS server measured in the same run.

One `kube-rdma webhook` process, pinned to one core, serves a closed loop of CONCURRENCY
keep-alive HTTPS connections from a client process pinned to the other core. Server-side
latency comes from the `ms` field of the webhook's own per-review log line (decode to encoded
response, the part the webhook controls); client-side latency adds TLS, HTTP and queueing.
Then the floor (bench/floor.py: decodes the AdmissionReview, answers allowed with an empty
patch, same certificate and TLS set-up) is driven the same way, and the ratios of the client
p50 and p99 and of the throughput are printed.

    python -m bench.webhook [--seconds 10] [--concurrency 8]      (make bench)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import orjson

from testbed.builders import pods
from testbed.net import free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def trusting(work: Path) -> ssl.SSLContext:
    """A client context trusting the CA the bench generated in `work`."""
    return ssl.create_default_context(cafile=str(work / "ca.crt"))


def review_body() -> bytes:
    pod = pods.pytorchjob("worker", 3, "ml-training", {"kube-rdma.io/profile": "rails8"})
    request = pods.request(pod)
    return orjson.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    )


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pin(core: int) -> None:
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > core:  # type: ignore[operator]
        os.sched_setaffinity(0, {core})


async def drive(
    port: int,
    ca: Path,
    body: bytes,
    seconds: float,
    concurrency: int,
    measured: Callable[[], None] = lambda: None,
) -> list[float]:
    """Client latencies (s) of a closed loop of `concurrency` connections, after a 2 s warm-up
    (`measured` is called when it ends)."""
    context = ssl.create_default_context(cafile=str(ca))
    connector = aiohttp.TCPConnector(ssl=context, limit=concurrency)
    latencies: list[float] = []
    url = f"https://localhost:{port}/mutate"
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> float:
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as response:
                answer = await response.read()
                if response.status != 200 or b'"allowed":true' not in answer:
                    raise RuntimeError(f"unexpected answer {response.status}: {answer[:200]!r}")
            return time.perf_counter() - started

        async def worker(until: float, record: bool) -> None:
            while time.perf_counter() < until:
                elapsed = await one()
                if record:
                    latencies.append(elapsed)

        warm = time.perf_counter() + 2
        await asyncio.gather(*(worker(warm, False) for _ in range(concurrency)))
        measured()
        end = time.perf_counter() + seconds
        await asyncio.gather(*(worker(end, True) for _ in range(concurrency)))
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cli = [sys.executable, "-m", "kube_rdma_cli"]
        subprocess.run(
            [
                *cli,
                "certs",
                "generate",
                "--service",
                "s",
                "--namespace",
                "n",
                "--out",
                tmp,
                "--localhost",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
        )
        profiles = work / "profiles.yaml"
        profiles.write_text(pods.PROFILES_YAML)
        port = free_port()
        server = subprocess.Popen(
            [
                *cli,
                "webhook",
                "--tls-cert-file",
                str(work / "tls.crt"),
                "--tls-key-file",
                str(work / "tls.key"),
                "--profiles",
                str(profiles),
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: pin(0),
        )
        server_ms: list[float] = []
        recording = threading.Event()

        def read_logs() -> None:
            assert server.stderr is not None
            for line in server.stderr:
                if recording.is_set() and b'"msg":"review"' in line:
                    server_ms.append(json.loads(line)["ms"])

        reader = threading.Thread(target=read_logs, daemon=True)
        reader.start()
        try:
            if not wait_healthy(f"https://localhost:{port}", trusting(work)):
                raise SystemExit("the webhook did not start")
            pin(1)
            recording.set()
            cpu_before = cpu_seconds(server.pid)
            marks: list[float] = []
            latencies = asyncio.run(
                drive(
                    port,
                    work / "ca.crt",
                    review_body(),
                    args.seconds,
                    args.concurrency,
                    lambda: marks.append(cpu_seconds(server.pid)),
                )
            )
            server_cpu = cpu_seconds(server.pid) - cpu_before
            review_cpu = (cpu_seconds(server.pid) - marks[0]) / len(latencies)
        finally:
            server.terminate()
            server.wait(timeout=10)
            reader.join(timeout=5)

        floor_latencies, floor_cpu = drive_floor(
            work, review_body(), args.seconds, args.concurrency
        )

    # The first 2 s were warm-up: keep only the server-side samples of the measured window.
    server_ms = server_ms[-len(latencies) :]
    client_ms = [x * 1000 for x in latencies]
    rate = len(latencies) / args.seconds
    print(
        f"webhook bench: 8-GPU PyTorchJob pod, profile rails8, TLS keep-alive, "
        f"{args.concurrency} connections, {args.seconds:.0f} s, server pinned to one core"
    )
    print(f"  reviews/s            {rate:8.0f}   (goal >= 2000)")
    busy = server_cpu / (args.seconds + 2)
    print(f"  server CPU busy      {busy:8.0%}   (of one core; warm-up included)")
    print(
        f"  server p50 / p99 ms  {statistics.median(server_ms):8.3f} / "
        f"{percentile(server_ms, 0.99):.3f}   (goal p99 <= 2 ms)"
    )
    print(
        f"  client p50 / p99 ms  {statistics.median(client_ms):8.3f} / "
        f"{percentile(client_ms, 0.99):.3f}"
    )
    floor_ms = [x * 1000 for x in floor_latencies]
    f50, f99 = statistics.median(floor_ms), percentile(floor_ms, 0.99)
    print(f"  floor reviews/s      {len(floor_latencies) / args.seconds:8.0f}")
    print(f"  floor p50 / p99 ms   {f50:8.3f} / {f99:.3f}")
    print(
        f"  ratio p50 / p99      {statistics.median(client_ms) / f50:8.2f} / "
        f"{percentile(client_ms, 0.99) / f99:.2f}   (goal p50 <= 3x the floor)"
    )
    print(
        f"  CPU ms per review    {review_cpu * 1000:8.3f} / floor {floor_cpu * 1000:.3f} = "
        f"{review_cpu / floor_cpu:.2f}   (the server processes' own time, measured window)"
    )
    return 0


def drive_floor(
    work: Path, body: bytes, seconds: float, concurrency: int
) -> tuple[list[float], float]:
    """The same closed loop against bench/floor.py serving the webhook's certificate; its
    latencies and its CPU seconds per review."""
    port = free_port()
    floor = subprocess.Popen(
        [sys.executable, "-m", "bench.floor", "--port", str(port),
         "--tls-cert-file", str(work / "tls.crt"), "--tls-key-file", str(work / "tls.key")],
        cwd=ROOT,
        preexec_fn=lambda: pin(0),
    )  # fmt: skip
    try:
        if not wait_healthy(f"https://localhost:{port}", trusting(work)):
            raise SystemExit("the floor did not start")
        marks: list[float] = []
        latencies = asyncio.run(
            drive(
                port,
                work / "ca.crt",
                body,
                seconds,
                concurrency,
                lambda: marks.append(cpu_seconds(floor.pid)),
            )
        )
        return latencies, (cpu_seconds(floor.pid) - marks[0]) / len(latencies)
    finally:
        floor.terminate()
        floor.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
