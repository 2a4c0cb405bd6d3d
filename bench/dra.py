"""The extender's per-call cost on a DRA cluster, next to the same cluster with device plugins,
in one run.

One generated cluster (testbed/clustergen, made uneven as bench/extender.py makes it) is served
twice by `kube-rdma extender --cluster-snapshot`: as generated (GPUs and RDMA units as extended
resources) and in its DRA form (testbed/clustergen/dra.py: every node's 8 GPUs and 8 NICs as
ResourceSlices, every running pod's devices held by an allocated claim, about 10,000 claims at
5,000 nodes). The same pod shapes are asked of both, as extended-resource pods of the first and
as pods with a claim template of the second (so the DRA server also resolves the claims and
runs their CEL selectors). Both servers are pinned to one core, and a client on the other sends
one call at a time to each in turn on kept-alive connections, so both see the same noise.
Filter and prioritize are each asked with 500 sampled names and with every node's name.
"first" is the largest of the first call of each shape (nothing cached for it yet); p50 and p99
are over the rest. "cpu/call" is each server's CPU time per call (schedstat). Each row ends
with the machine's load average as the case ends: on a shared machine the figures mean little
without it.

    python -m bench.dra [--nodes 5000] [--calls 200]        (make bench)
"""

from __future__ import annotations

import argparse
import http.client
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

from bench.extender import SHAPES, cpu_ns, distinct_states, percentile, pin, post, start, uneven
from kube_rdma.core.objects import Json
from testbed.clustergen import ClusterSpec, generate, write_snapshot
from testbed.clustergen.dra import dra_form
from testbed.net import free_port


def shapes_in(objects: list[Json]) -> list[Json]:
    names = {s["metadata"]["name"] for s in SHAPES}
    found = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Pod"}
    return [found[n] for n in (s["metadata"]["name"] for s in SHAPES) if n in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    spec = ClusterSpec(
        nodes=args.nodes, seed=7, link_layer="mixed" if args.nodes > 256 else "Ethernet"
    )
    plugins = [*uneven(generate(spec), random.Random(3)), *SHAPES]
    dra = dra_form(plugins)
    names = [o["metadata"]["name"] for o in plugins if o["kind"] == "Node"]
    pods = [shapes_in(plugins), shapes_in(dra)]
    claims = sum(1 for o in dra if o["kind"] == "ResourceClaim")
    states = [distinct_states(plugins)[0], distinct_states(dra)[0]]
    sample = min(500, len(names))
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp) / "plugins.json", Path(tmp) / "dra.json"]
        write_snapshot(plugins, files[0])
        write_snapshot(dra, files[1])
        ports = free_port(), free_port()
        servers = []
        for path, port in zip(files, ports, strict=True):
            servers.append(
                start(
                    [sys.executable, "-m", "kube_rdma_cli", "--log-level", "warning",
                     "extender", "--cluster-snapshot", str(path), "--host", "127.0.0.1",
                     "--port", str(port)],
                    port,
                )
            )  # fmt: skip
        try:
            time.sleep(3.0)
            pin(1)
            connections = [http.client.HTTPConnection("127.0.0.1", p, timeout=60) for p in ports]
            print(f"load average before: {load_average()}")
            print(
                f"DRA bench: {len(names)} nodes ({states[0]} distinct node states with device "
                f"plugins, {states[1]} with DRA), {claims} allocated claims in the DRA form; "
                f"serving after {servers[0][1]:.1f} s (device plugins), {servers[1][1]:.1f} s "
                "(DRA); both pinned to one core, one call at a time, alternating"
            )
            print(
                f"  {'verb':<11}{'candidates':<16}{'form':<16}{'p50 ms':>8}{'p99 ms':>8}"
                f"{'first':>8}{'cpu/call':>10}  load (/proc/loadavg after the case)"
            )
            rng = random.Random(1)
            sizes = [sample, len(names)] if len(names) > sample else [sample]
            for verb, size in [(v, n) for n in sizes for v in ("filter", "prioritize")]:
                measure(
                    connections,
                    [s[0].pid for s in servers],
                    pods,
                    names,
                    verb,
                    size,
                    rng,
                    args.calls,
                )
        finally:
            for server, _ in servers:
                server.terminate()
                server.wait(timeout=10)
    return 0


def measure(
    connections: list[http.client.HTTPConnection],
    pids: list[int],
    pods: list[list[Json]],
    names: list[str],
    verb: str,
    size: int,
    rng: random.Random,
    calls: int,
) -> None:
    first: list[list[float]] = [[], []]
    rest: list[list[float]] = [[], []]
    before: list[int] = []
    for i in range(calls):
        if i == len(SHAPES):
            before = [cpu_ns(pid) for pid in pids]
        chosen = rng.sample(names, size)
        for form in (0, 1):
            pod = pods[form][i % len(SHAPES)]
            renamed = dict(
                pod, metadata={**pod["metadata"], "name": f"{pod['metadata']['name']}-{i}"}
            )
            body = orjson.dumps({"Pod": renamed, "NodeNames": chosen})
            (first if i < len(SHAPES) else rest)[form].append(post(connections[form], verb, body))
    spent = [(cpu_ns(pid) - b) / 1e6 / len(rest[0]) for pid, b in zip(pids, before, strict=True)]
    for form, label in ((0, "device plugins"), (1, "DRA")):
        times = rest[form]
        print(
            f"  {verb:<11}{'NodeNames ' + str(size):<16}{label:<16}"
            f"{statistics.median(times):8.2f}{percentile(times, 0.99):8.2f}"
            f"{max(first[form]):8.2f}{spent[form]:10.2f}  {load_average()}"
        )


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: the machine's other work, beside each figure."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    sys.exit(main())
