"""Per-call cost against the cluster's size: filter and prioritize over the same number of names
in clusters of 1,000 to 100,000 nodes, against a do-nothing floor in the same process.

For each size, a child process generates the cluster (testbed/clustergen, seed 7, a quarter of
the spines InfiniBand, rail faults, 80 % of the GPUs busy with training pods, `--daemon` DaemonSet
pods on every node and Deployment pods up to `--pods-per-node` pods a node; the wide address
plan past 32,768 nodes), loads it into the extender's model as snapshot mode does, drops the
generated objects, freezes the collector as the extender does once synced, and then times what
the extender's filter and prioritize handlers do for one call, without the HTTP around it: the
body decoded (`extender.protocol.decode_args`), the real `Scheduler` (gang lookup, filtered-pod
upkeep and all), the answer built and encoded. The floor is what bench/floor.py does for the same
body: decode it and encode an answer of the same shape. The HTTP both pay alike is measured by
bench/extender.py; what the cluster's size can change is in here.

Calls cycle through bench/extender.py's six pod shapes with `--names` names sampled at random per
call (all nodes when the cluster has fewer); the first call of each shape (its tables built over
every node) is reported apart as "first". The child reports its resident memory (VmRSS) once the
model is built. With `--profile`, the largest size's calls run once more under cProfile and the
top entries are printed. With `--chart`, a PNG of p50 and p99 against the size (matplotlib, the
`plot` extra), the figures beside it as JSON.

    python -m bench.scale [--sizes 1000,5000,20000] [--names 5000] [--calls 300] [--chart F]
    python -m bench.scale --memory-only --sizes 1000,5000,20000,100000

With `--memory-only`, no calls: each size's model is built from objects trimmed as they are
generated (a watch's transform trims each as it arrives), and the child reports VmRSS once built
and VmHWM (its peak, the generator's whole objects included).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import random
import statistics
import subprocess
import sys
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from bench.extender import SHAPES, percentile, pin
from kube_rdma.core.objects import Json
from testbed.clustergen import MAX_NODES, ClusterSpec, generate

VERBS = ("filter", "prioritize")


def spec_for(nodes: int, daemon: int, pods_per_node: int, busy: float = 0.8) -> ClusterSpec:
    spec = ClusterSpec(
        nodes=nodes,
        seed=7,
        link_layer="mixed",
        busy_fraction=busy,
        daemon_pods_per_node=daemon,
        wide_addresses=nodes > MAX_NODES,
    )
    return replace(spec, cpu_pods=max(0, nodes * (pods_per_node - daemon) - nodes))


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def hwm_mb() -> float:
    return rss_mb("VmHWM")


def floor_filter(body: bytes) -> bytes:
    args = orjson.loads(body)
    names = args["NodeNames"]
    answer = {
        "NodeNames": names,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": "",
        "Nodes": None,
    }
    return orjson.dumps(answer)


def floor_prioritize(body: bytes) -> bytes:
    args = orjson.loads(body)
    return orjson.dumps([{"Host": name, "Score": 5} for name in args["NodeNames"]])


def one_gpu_pods(node: Json, count: int) -> list[Json]:
    """`count` pods of one GPU and one RDMA device bound to `node`, each of a job of its own, as
    a training operator makes them (labels, owner, the webhook's annotations)."""
    name = node["metadata"]["name"]
    owner = f"{zlib.crc32(name.encode()):08x}"
    pods = []
    for i in range(count):
        job = f"{name}-job-{i}"
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{job}-worker-0",
                    "namespace": "team-llm",
                    "uid": f"{owner}-{i:04x}-4000-8000-000000000001",
                    "resourceVersion": "1",
                    "labels": {"training.kubeflow.org/job-name": job},
                    "annotations": {"k8s.v1.cni.cncf.io/networks": "kube-rdma/rail1"},
                    "ownerReferences": [
                        {
                            "apiVersion": "kubeflow.org/v1",
                            "kind": "PyTorchJob",
                            "name": job,
                            "uid": f"{owner}-{i:04x}-4000-8000-0000000000ff",
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "containers": [
                        {
                            "name": "pytorch",
                            "resources": {
                                "limits": {"nvidia.com/gpu": "1", "rdma/hca": "1"},
                                "requests": {"nvidia.com/gpu": "1", "rdma/hca": "1"},
                            },
                        }
                    ],
                    "nodeName": name,
                },
                "status": {"phase": "Running", "startTime": "2024-07-03T00:01:05Z"},
            }
        )
    return pods


def _bound_gpu_pod(pod: Json) -> bool:
    limits = (pod["spec"]["containers"][0].get("resources") or {}).get("limits") or {}
    return bool(pod["spec"].get("nodeName")) and "nvidia.com/gpu" in limits


def one_size(nodes: int, names_per_call: int, calls: int, daemon: int, per_node: int,
             profile: bool, memory_only: bool = False, gpu_pods_per_node: int = 0,
             ) -> dict[str, Any]:  # fmt: skip
    from extender import protocol
    from extender.app import EXTENDER, Settings, create_app
    from extender.cluster.snapshot import SnapshotSource
    from extender.cluster.trim import trim_node, trim_pod

    started = time.perf_counter()
    if gpu_pods_per_node:
        # One-GPU pods filling every GPU node, DaemonSet pods making up the rest.
        objects = generate(spec_for(nodes, per_node - gpu_pods_per_node, 0, busy=0.0))
        objects += [
            pod
            for o in list(objects)
            if o["kind"] == "Node" and int(o["status"]["allocatable"].get("nvidia.com/gpu", 0))
            for pod in one_gpu_pods(o, gpu_pods_per_node)
        ]
    else:
        objects = generate(spec_for(nodes, daemon, per_node))
    generated = time.perf_counter() - started
    pods = sum(1 for o in objects if o["kind"] == "Pod")
    gpu_pods = sum(1 for o in objects if o["kind"] == "Pod" and _bound_gpu_pod(o))
    trimmed = 0.0
    if memory_only:
        # What a watch's transform does as each object arrives: the whole objects go at once,
        # not after the model is built (the generator's list is what holds them all).
        started = time.perf_counter()
        for i, o in enumerate(objects):
            if o["kind"] in ("Node", "Pod"):
                objects[i] = (trim_node if o["kind"] == "Node" else trim_pod)(o)
        trimmed = time.perf_counter() - started
        gc.collect()
    started = time.perf_counter()
    source = SnapshotSource(objects)
    loaded = time.perf_counter() - started
    names = list(source.cluster.views)
    del objects
    gc.collect()
    gc.freeze()
    scheduler = create_app(Settings(), source)[EXTENDER].scheduler
    memory = rss_mb()
    if memory_only:
        return {
            "nodes": nodes,
            "pods": pods,
            "gpu_pods": gpu_pods,
            "generate_s": generated,
            "trim_s": trimmed,
            "load_s": loaded,
            "rss_mb": memory,
            "hwm_mb": hwm_mb(),
            "states": len({v.state for v in source.cluster.views.values()}),
            "load": Path("/proc/loadavg").read_text().split()[0],
        }

    def filter_call(body: bytes) -> bytes:
        args = protocol.decode_args(body)
        outcome = scheduler.filter(args.pod, args.names)
        result = protocol.filter_result(args, outcome.passed, outcome.failed, outcome.unresolvable)
        return orjson.dumps(result)

    def prioritize_call(body: bytes) -> bytes:
        args = protocol.decode_args(body)
        return scheduler.answer_scores(args.pod, args.names).json  # as the handler answers

    real = {"filter": filter_call, "prioritize": prioritize_call}
    floor = {"filter": floor_filter, "prioritize": floor_prioritize}
    rng = random.Random(1)
    count = min(names_per_call, len(names))
    bodies = []
    for i in range(calls):
        shape = SHAPES[i % len(SHAPES)]
        pod = dict(
            shape, metadata={**shape["metadata"], "name": f"{shape['metadata']['name']}-{i}"}
        )
        bodies.append(orjson.dumps({"Pod": pod, "NodeNames": rng.sample(names, count)}))
    result: dict[str, Any] = {
        "nodes": nodes,
        "pods": pods,
        "gpu_pods": gpu_pods,
        "names": count,
        "generate_s": generated,
        "load_s": loaded,
        "rss_mb": memory,
        "states": len({v.state for v in source.cluster.views.values()}),
        "load": Path("/proc/loadavg").read_text().split()[0],
    }
    for verb in VERBS:
        first: list[float] = []
        rest: list[float] = []
        base: list[float] = []
        cpu: list[float] = []
        cpu_base: list[float] = []
        for i, body in enumerate(bodies):
            c0, t0 = time.thread_time(), time.perf_counter()
            size = len(real[verb](body))
            c1, t1 = time.thread_time(), time.perf_counter()
            floor[verb](body)
            c2, t2 = time.thread_time(), time.perf_counter()
            (first if i < len(SHAPES) else rest).append((t1 - t0) * 1000)
            if i >= len(SHAPES):
                base.append((t2 - t1) * 1000)
                cpu.append((c1 - c0) * 1000)
                cpu_base.append((c2 - c1) * 1000)
        result[verb] = {
            "cpu_p50": statistics.median(cpu),
            "cpu_floor_p50": statistics.median(cpu_base),
            "first": max(first),
            "p50": statistics.median(rest),
            "p99": percentile(rest, 0.99),
            "floor_p50": statistics.median(base),
            "floor_p99": percentile(base, 0.99),
            "bytes": size,
        }
    if profile:
        out = io.StringIO()
        for verb in VERBS:
            profiler = cProfile.Profile()
            profiler.enable()
            for body in bodies[len(SHAPES) :]:
                real[verb](body)
            profiler.disable()
            out.write(f"--- cProfile, {verb} over {count} names, {len(bodies) - 6} calls ---\n")
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
        result["profile"] = out.getvalue()
    return result


def chart(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    sizes = [r["nodes"] for r in rows]
    for verb, color in zip(VERBS, ("tab:blue", "tab:orange"), strict=True):
        cpu = [r[verb]["cpu_p50"] for r in rows]
        axes.plot(sizes, cpu, "o-", color=color, label=f"{verb}: CPU p50")
        axes.plot(
            sizes, [r[verb]["p50"] for r in rows], "o--", color=color, label=f"{verb}: wall p50"
        )
        floor = [r[verb]["cpu_floor_p50"] for r in rows]
        axes.plot(sizes, floor, ":", color=color, label=f"{verb}: floor CPU p50")
    axes.set_xscale("log")
    axes.set_xlabel("nodes in the cluster")
    axes.set_ylabel(f"ms per call over {rows[-1]['names']:,} names (no HTTP)")
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    path.with_suffix(".json").write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--names", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--daemon", type=int, default=6, help="DaemonSet pods per node")
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--chart", type=Path)
    parser.add_argument(
        "--gpu-pods-per-node",
        type=int,
        default=0,
        help="with --memory-only: this many one-GPU pods bound on each GPU node and DaemonSet "
        "pods for the rest of --pods-per-node, in place of the training and Deployment pods",
    )
    parser.add_argument(
        "--memory-only",
        action="store_true",
        help="no calls: the model's resident memory and build time only, each object trimmed "
        "as generated (as a watch's transform does) to bound the peak",
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        pin(1)
        found = one_size(
            args.one,
            args.names,
            args.calls,
            args.daemon,
            args.pods_per_node,
            args.profile,
            args.memory_only,
            args.gpu_pods_per_node,
        )
        sys.stdout.buffer.write(orjson.dumps(found) + b"\n")
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    print(
        f"scale bench: filter and prioritize over {args.names} names (no HTTP), one process per "
        "size pinned to core 1, ms"
    )
    print(
        f"  {'nodes':>7}{'pods':>9}{'states':>7}{'RSS MB':>8}{'load s':>8}  {'verb':<11}"
        f"{'p50':>7}{'p99':>7}{'first':>7}{'floor p50':>10}{'p99':>6}{'ratio p50':>10}{'p99':>6}"
        f"{'cpu p50':>8}{'floor':>7}{'loadavg':>8}"
    )
    for size in sizes:
        profile = args.profile and size == sizes[-1]
        command = [sys.executable, "-m", "bench.scale", "--one", str(size), "--names",
                   str(args.names), "--calls", str(args.calls), "--daemon", str(args.daemon),
                   "--pods-per-node", str(args.pods_per_node)]  # fmt: skip
        command += ["--profile"] if profile else []
        command += ["--memory-only"] if args.memory_only else []
        command += ["--gpu-pods-per-node", str(args.gpu_pods_per_node)]
        done = subprocess.run(command, capture_output=True, check=False, env=os.environ)
        if done.returncode != 0:
            sys.stderr.write(done.stderr.decode())
            print(f"  {size:>7} failed (exit {done.returncode})")
            continue
        row: Json = orjson.loads(done.stdout.splitlines()[-1])
        rows.append(row)
        if args.memory_only:
            print(
                f"  {row['nodes']:>7,} nodes {row['pods']:>9,} pods ({row['gpu_pods']:,} GPU pods "
                f"bound): generated in {row['generate_s']:.1f} s, trimmed {row['trim_s']:.1f} s, "
                f"model built in {row['load_s']:.1f} s; VmRSS {row['rss_mb']:,.0f} MB, VmHWM "
                f"{row['hwm_mb']:,.0f} MB, {row['states']} states, load {row['load']}",
                flush=True,
            )
            continue
        for verb in VERBS:
            v = row[verb]
            print(
                f"  {row['nodes']:>7}{row['pods']:>9}{row['states']:>7}{row['rss_mb']:>8.0f}"
                f"{row['load_s']:>8.1f}  {verb:<11}{v['p50']:>7.2f}{v['p99']:>7.2f}"
                f"{v['first']:>7.1f}{v['floor_p50']:>10.2f}{v['floor_p99']:>6.2f}"
                f"{v['p50'] / v['floor_p50']:>10.2f}{v['p99'] / v['floor_p99']:>6.2f}"
                f"{v['cpu_p50']:>8.2f}{v['cpu_floor_p50']:>7.2f}{row['load']:>8}"
            )
        if "profile" in row:
            print(row["profile"])
    if args.chart and rows:
        chart(rows, args.chart)
        print(f"  chart: {args.chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
