"""Extender latency on a 5,000-node cluster: filter and prioritize over HTTP.

A `kube-rdma extender` process, pinned to one core, serves a generated snapshot
(testbed/clustergen: HGX boards with full topology documents, rail faults, half the GPUs
used by running training pods). A client on the other core sends one call at a time on a
kept-alive connection (as kube-scheduler does), for a mix of pod shapes (8-GPU RoCE and
InfiniBand workers, 4/2/1-GPU pods, one with min-affinity PIX), with:
- NodeNames lists of 500 (kube-scheduler's default sample at 5,000 nodes) and of 5,000,
- full Nodes lists of 500 (nodeCacheCapable: false), to show what that costs.
Latency is the client's round trip: HTTP, JSON decode and encode included. "first" calls are
the first of each shape (nothing cached for it yet); the others repeat shapes, as the pods of
one job do.

    python -m bench.extender [--nodes 5000] [--calls 300]        (make bench)
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from kube_rdma.core.objects import Json
from testbed.builders import nodes as fixtures
from testbed.clustergen import ClusterSpec, generate, write_snapshot
from testbed.net import free_port, wait_listening

ROOT = Path(__file__).resolve().parent.parent
Make = Callable[[Json, random.Random], Json]
SHAPES = [
    fixtures.pod("eth8", network="macvlan"),
    fixtures.pod("ib8", network="ib"),
    fixtures.pod("eth4", gpus=4, rdma={"rdma/hca": 4}),
    fixtures.pod("eth2", gpus=2, rdma={"rdma/hca": 2}),
    fixtures.pod("eth1", gpus=1, rdma={"rdma/hca": 1}),
    fixtures.pod("pix8", annotations={"kube-rdma.io/min-affinity": "PIX"}),
]


def pin(core: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > core:
        os.sched_setaffinity(0, {core})


def post(connection: http.client.HTTPConnection, verb: str, body: bytes) -> float:
    started = time.perf_counter()
    connection.request("POST", f"/{verb}", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    if response.status != 200:
        raise SystemExit(f"/{verb} answered HTTP {response.status}")
    return (time.perf_counter() - started) * 1000


def run(
    connection: http.client.HTTPConnection, verb: str, make: Make, calls: int, rng: random.Random
) -> tuple[list[float], list[float]]:
    first: list[float] = []
    rest: list[float] = []
    for i in range(calls):
        shape = SHAPES[i % len(SHAPES)]
        name = f"{shape['metadata']['name']}-{i}"
        pod = dict(shape, metadata={**shape["metadata"], "name": name})
        elapsed = post(connection, verb, orjson.dumps(make(pod, rng)))
        (first if i < len(SHAPES) else rest).append(elapsed)
    return first, rest


def server_buckets(connection: http.client.HTTPConnection, verb: str) -> dict[float, float]:
    """The extender's own latency histogram for `verb`: upper bound (s) -> cumulative count."""
    connection.request("GET", "/metrics")
    response = connection.getresponse()
    text = response.read().decode()
    buckets = {}
    prefix = "kube_rdma_extender_call_duration_seconds_bucket{"
    for line in text.splitlines():
        if line.startswith(prefix) and f'verb="{verb}"' in line:
            bound = line.split('le="')[1].split('"')[0]
            buckets[float("inf") if bound == "+Inf" else float(bound)] = float(line.split()[-1])
    return buckets


def share_within(before: dict[float, float], after: dict[float, float], limit: float) -> float:
    """Of the calls between two histogram readings, the share the server answered in `limit` s."""
    total = after[float("inf")] - before.get(float("inf"), 0.0)
    within = after[limit] - before.get(limit, 0.0)
    return within / total if total else 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start(snapshot: Path) -> tuple[subprocess.Popen[bytes], int, float]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "kube_rdma.cli", "--log-level", "warning", "extender",
         "--cluster-snapshot", str(snapshot), "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        preexec_fn=lambda: pin(0),
    )  # fmt: skip
    started = time.perf_counter()
    if not wait_listening(port, seconds=120):
        raise SystemExit("the extender did not start")
    return server, port, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    objects = generate(ClusterSpec(nodes=args.nodes, seed=7))
    node_objects = [o for o in objects if o["kind"] == "Node"]
    names = [o["metadata"]["name"] for o in node_objects]
    sample_size = min(500, len(names))  # kube-scheduler's sample at 5,000 nodes

    def sample(pod: Json, r: random.Random) -> Json:
        return {"Pod": pod, "NodeNames": r.sample(names, sample_size)}

    def every(pod: Json, r: random.Random) -> Json:
        return {"Pod": pod, "NodeNames": names}

    def full(pod: Json, r: random.Random) -> Json:
        return {"Pod": pod, "Nodes": {"items": r.sample(node_objects, sample_size)}}

    cases: list[tuple[str, str, Make]] = [
        ("filter", f"NodeNames {sample_size}", sample),
        ("prioritize", f"NodeNames {sample_size}", sample),
        ("filter", f"NodeNames {len(names)}", every),
        ("prioritize", f"NodeNames {len(names)}", every),
        ("filter", f"Nodes {sample_size}", full),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "cluster.json"
        write_snapshot(objects, snapshot)
        server, port, load = start(snapshot)
        try:
            time.sleep(
                3.0
            )  # let the server settle its cache (the full collection before gc.freeze)
            pin(1)
            rng = random.Random(1)
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            print(
                f"extender bench: {len(names)} nodes, serving after {load:.1f} s, server pinned "
                "to one core, one call at a time on a kept-alive connection"
            )
            header = f"  {'verb':<11}{'candidates':<16}{'p50 ms':>8}{'p99 ms':>9}{'first max':>11}"
            print(header + f"{'server <=1 ms':>15}{'<=5 ms':>8}")
            for verb, label, make in cases:
                calls = args.calls if "Names" in label else max(args.calls // 6, 3 * len(SHAPES))
                before = server_buckets(connection, verb)
                first, rest = run(connection, verb, make, calls, rng)
                after = server_buckets(connection, verb)
                p50, p99 = statistics.median(rest), percentile(rest, 0.99)
                fast, ok = share_within(before, after, 0.001), share_within(before, after, 0.005)
                print(
                    f"  {verb:<11}{label:<16}{p50:8.2f}{p99:9.2f}{max(first):11.2f}"
                    f"{fast:15.1%}{ok:8.1%}"
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    print("  goal: p99 <= 1 ms at 500 names, <= 5 ms at 5,000 names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
