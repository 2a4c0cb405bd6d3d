"""Extender latency on a 5,000-node cluster, against a do-nothing server measured in the same run.

A `kube-rdma extender` process serves a generated snapshot (testbed/clustergen: HGX boards with
full topology documents, a quarter of the spines InfiniBand, rail faults, half the GPUs used by
running training pods), made uneven on purpose: most nodes also run a small side pod taking
0-2 GPUs and 1-3 shared RDMA units, so nodes differ in what is used and the cluster has
hundreds of distinct states (the count is printed), not a few dozen. Next to it the floor
(bench/floor.py) decodes the same requests and answers same-shaped bodies doing nothing else.
A second floor, bench/floor_go (Go's net/http and encoding/json, what kube-scheduler's own side
of the call is made of), is built and served too when `go` is on the PATH. The servers are
pinned to one core; a client on the other core sends one call at a time on a kept-alive
connection to each (as kube-scheduler does), alternating between them call by call so that all
see the same noise, for a mix of pod shapes (8-GPU RoCE and InfiniBand
workers, 4/2/1-GPU pods, one with min-affinity PIX), with:
- NodeNames lists of 500 (kube-scheduler's default sample at 5,000 nodes) and of 5,000,
- full Nodes lists of 500 (nodeCacheCapable: false), to show what that costs.
Latency is the client's round trip: HTTP, JSON decode and encode included. "first" calls are
the first of each shape (nothing cached for it yet); the others repeat shapes, as the pods of
one job do. The ratio is the extender's p50 (p99) over the floor's. "cpu/call" is the CPU time
each server process spent per call (its threads' schedstat, first calls left out), which other
work on the machine stretches far less than the round trip: the steadier figure on a shared
machine. With `--profile`, the NodeNames cases' calls run once more in this process under
cProfile (decode, the real Scheduler, the answer encoded, as the handlers do) and the top
entries are printed.

    python -m bench.extender [--nodes 5000] [--calls 300] [--profile]        (make bench)
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import io
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from extender.cluster.snapshot import SnapshotSource
from kube_rdma.core.objects import Json
from testbed.builders import nodes as fixtures
from testbed.clustergen import GPU, RDMA_SHARED, ClusterSpec, generate, write_snapshot
from testbed.net import free_port, wait_healthy

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
SIDE_POD_SHARE = 0.7


def pin(core: int) -> None:
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > core:
        os.sched_setaffinity(0, {core})


def uneven(objects: list[Json], rng: random.Random) -> list[Json]:
    """`objects` plus a side pod on most nodes: 0-2 GPUs and 1-3 RDMA units of what is free."""
    used: dict[str, list[int]] = {}
    for pod in objects:
        node = pod.get("spec", {}).get("nodeName")
        if pod["kind"] == "Pod" and node and pod["status"]["phase"] == "Running":
            limits = pod["spec"]["containers"][0]["resources"]["limits"]
            totals = used.setdefault(node, [0, 0])
            totals[0] += int(limits.get(GPU, 0))
            totals[1] += int(limits.get(RDMA_SHARED, 0))
    side = []
    for node in (o for o in objects if o["kind"] == "Node"):
        allocatable = node["status"]["allocatable"]
        name = node["metadata"]["name"]
        gpus, units = used.get(name, [0, 0])
        free_gpus = int(allocatable.get(GPU, 0)) - gpus
        free_units = int(allocatable.get(RDMA_SHARED, 0)) - units
        if free_units < 1 or rng.random() > SIDE_POD_SHARE:
            continue
        limits = {
            GPU: str(rng.randint(0, min(2, free_gpus))),
            RDMA_SHARED: str(rng.randint(1, min(3, free_units))),
        }
        side.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"side-{name}", "namespace": "side", "uid": f"side-{name}"},
                "spec": {
                    "nodeName": name,
                    "containers": [{"name": "side", "resources": {"limits": limits}}],
                },
                "status": {"phase": "Running"},
            }
        )
    return objects + side


def distinct_states(objects: list[Json]) -> tuple[int, int]:
    """How many distinct node states and rail signatures the extender's model sees."""
    views = SnapshotSource(objects).cluster.views.values()
    return len({v.state for v in views}), len({v.rails_key for v in views})


def post(connection: http.client.HTTPConnection, verb: str, body: bytes) -> float:
    started = time.perf_counter()
    connection.request("POST", f"/{verb}", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    if response.status != 200:
        raise SystemExit(f"/{verb} answered HTTP {response.status}")
    return (time.perf_counter() - started) * 1000


Timings = tuple[list[float], list[float]]


def run(
    servers: list[http.client.HTTPConnection],
    verb: str,
    make: Make,
    calls: range,
    rng: random.Random,
    sent: list[tuple[str, bytes]],
) -> list[Timings]:
    """Each call sent to every server in turn; per server, the first calls (of each shape) and
    the rest. The bodies are appended to `sent`."""
    timings: list[Timings] = [([], []) for _ in servers]
    for i in calls:
        shape = SHAPES[i % len(SHAPES)]
        name = f"{shape['metadata']['name']}-{i}"
        pod = dict(shape, metadata={**shape["metadata"], "name": name})
        body = orjson.dumps(make(pod, rng))
        sent.append((verb, body))
        for connection, (first, rest) in zip(servers, timings, strict=True):
            (first if i < len(SHAPES) else rest).append(post(connection, verb, body))
    return timings


def cpu_ns(pid: int) -> int:
    """Nanoseconds the process's threads have run on a CPU (Linux schedstat): unlike wall time,
    not stretched when other work preempts the server."""
    return sum(
        int(task.joinpath("schedstat").read_text().split()[0])
        for task in Path(f"/proc/{pid}/task").iterdir()
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start(command: list[str], port: int) -> tuple[subprocess.Popen[bytes], float]:
    server = subprocess.Popen(command, cwd=ROOT, preexec_fn=lambda: pin(0))
    started = time.perf_counter()
    if not wait_healthy(f"http://127.0.0.1:{port}", seconds=180):
        raise SystemExit(f"{command[2]} did not start")
    return server, time.perf_counter() - started


def go_floor(folder: Path) -> list[str] | None:
    """The command serving bench/floor_go, built into `folder`; None without a Go toolchain."""
    go = shutil.which("go")
    if go is None:
        return None
    binary = folder / "floor-go"
    source = ROOT / "bench" / "floor_go" / "main.go"
    subprocess.run([go, "build", "-o", str(binary), str(source)], check=True, cwd=folder)
    return [str(binary), "-port"]


def profile(objects: list[Json], bodies: list[tuple[str, bytes]]) -> str:
    """cProfile of what the handlers do for these calls, in this process."""
    from extender import protocol
    from extender.app import EXTENDER, Settings, create_app

    scheduler = create_app(Settings(), SnapshotSource(objects))[EXTENDER].scheduler

    def call(verb: str, body: bytes) -> bytes:
        args = protocol.decode_args(body)
        if verb == "prioritize":
            return scheduler.answer_scores(args.pod, args.names).json
        found = scheduler.filter(args.pod, args.names)
        return orjson.dumps(
            protocol.filter_result(args, found.passed, found.failed, found.unresolvable)
        )

    out = io.StringIO()
    for verb in ("filter", "prioritize"):
        mine = [body for v, body in bodies if v == verb]
        for body in mine[: len(SHAPES)]:
            call(verb, body)  # the shapes' tables built
        profiler = cProfile.Profile()
        profiler.enable()
        for body in mine[len(SHAPES) :]:
            call(verb, body)
        profiler.disable()
        out.write(f"--- cProfile, {verb}: {len(mine) - len(SHAPES)} calls ---\n")
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(10)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    spec = ClusterSpec(
        nodes=args.nodes, seed=7, link_layer="mixed" if args.nodes > 256 else "Ethernet"
    )
    objects = uneven(generate(spec), random.Random(3))
    node_objects = [o for o in objects if o["kind"] == "Node"]
    names = [o["metadata"]["name"] for o in node_objects]
    sample_size = min(500, len(names))  # kube-scheduler's sample at 5,000 nodes
    states, signatures = distinct_states(objects)

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
    sent: list[tuple[str, bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "cluster.json"
        write_snapshot(objects, snapshot)
        go = go_floor(Path(tmp))
        ports = [free_port(), free_port()] + ([free_port()] if go else [])
        extender, load = start(
            [sys.executable, "-m", "kube_rdma_cli", "--log-level", "warning", "extender",
             "--cluster-snapshot", str(snapshot), "--host", "127.0.0.1", "--port", str(ports[0])],
            ports[0],
        )  # fmt: skip
        servers = [extender]
        servers.append(
            start([sys.executable, "-m", "bench.floor", "--port", str(ports[1])], ports[1])[0]
        )
        if go:
            servers.append(start([*go, str(ports[2])], ports[2])[0])
        floors = ["python floor", "go floor"][: len(servers) - 1]
        try:
            time.sleep(3.0)  # let the extender settle its cache (the full collection, gc.freeze)
            pin(1)
            rng = random.Random(1)
            connections = [http.client.HTTPConnection("127.0.0.1", p, timeout=30) for p in ports]
            print(
                f"extender bench: {len(names)} nodes in {states} distinct states "
                f"({signatures} rail signatures), serving after {load:.1f} s; extender and "
                f"{' and '.join(floors)} pinned to one core, one call at a time on kept-alive "
                f"connections, load average {Path('/proc/loadavg').read_text().split()[0]}"
            )
            print(
                f"  {'verb':<11}{'candidates':<16}{'p50 ms':>7}{'p99':>7}{'cpu':>7}{'first':>7}"
                f"  {'against':<13}{'p50':>6}{'p99':>7}{'cpu':>6}"
                f"{'ratio p50':>10}{'p99':>6}{'cpu':>6}"
            )
            pids = [server.pid for server in servers]
            for verb, label, make in cases:
                calls = args.calls if "Names" in label else max(args.calls // 6, 3 * len(SHAPES))
                kept = sent if "Names" in label else []
                ((first, _), *_) = run(connections, verb, make, range(len(SHAPES)), rng, kept)
                before = [cpu_ns(pid) for pid in pids]
                timings = run(connections, verb, make, range(len(SHAPES), calls), rng, kept)
                spent = [cpu_ns(pid) - b for pid, b in zip(pids, before, strict=True)]
                rest = timings[0][1]
                used = [ns / 1e6 / len(rest) for ns in spent]
                p50, p99 = statistics.median(rest), percentile(rest, 0.99)
                for index, floor in enumerate(floors, start=1):
                    base = timings[index][1]
                    f50, f99 = statistics.median(base), percentile(base, 0.99)
                    head = (
                        f"  {verb:<11}{label:<16}{p50:7.2f}{p99:7.2f}{used[0]:7.2f}"
                        f"{max(first):7.1f}"
                        if index == 1
                        else " " * 55
                    )
                    print(
                        f"{head}  {floor:<13}{f50:6.2f}{f99:7.2f}{used[index]:6.2f}"
                        f"{p50 / f50:10.2f}{p99 / f99:6.2f}{used[0] / used[index]:6.2f}"
                    )
        finally:
            for server in servers:
                server.terminate()
                server.wait(timeout=10)
    if args.profile:
        print(profile(objects, sent))
    print("  goal: p50 <= 2x the floor for NodeNames lists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
