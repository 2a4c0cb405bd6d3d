"""Extender memory and start-up on a 5,000-node cluster: resident memory once ready, and the time
from starting the process to ready.

A generated cluster (testbed/clustergen: HGX nodes with their topology documents, training pods,
and with `--pods` the CPU pods of DaemonSets and Deployments that make up most pods of a real
cluster) is written in full, as a watch delivers it: managedFields, the defaults the apiserver
fills in, container statuses, node images. Then, for each scenario:
- live: the fake apiserver serves it as a process of its own (`python -m testbed.fakeapi`), and
  the real `kube-rdma extender --kubeconfig` lists and watches it;
- snapshot: `kube-rdma extender --cluster-snapshot` reads the same objects from the file.
Time to ready runs from starting the process to the first 200 from /readyz (the interpreter's
start and imports included); memory is VmRSS and VmHWM from /proc/PID/status a moment after
ready. Each scenario runs `--runs` times; the table gives the median and the range.

    python -m bench.extender_memory [--nodes 5000] [--pods 50000] [--runs 3]

With `--burst N`, instead: the watch events the extender absorbs when N pods are created at once.
The fake apiserver (in the extender's process: one event loop serves both, as a busy
apiserver's watch stream does, so the figure is what one core absorbs) holds `--nodes` nodes,
90 % of their GPUs busy with training pods; a gang of 4 x 8 GPUs has its plan (its first member
filtered) and a waiting gang of 64 a hold on 4 nodes; then N pending pods are created in chunks
of 500, as fast as the server takes them. Reported: the creation rate, the time until the cache
holds every pod and the rate that makes, and whether the plan (the same nodes) and the hold are
still there once it has caught up and a sweep ran (the held gang asks for more RDMA devices a
member than a node has: it waits, and keeps holding).

    python -m bench.extender_memory --burst 10000 [--nodes 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from testbed.clustergen import ClusterSpec, generate, write_snapshot
from testbed.net import free_port

READY_WITHIN = 300.0
SETTLE = 1.0
"""Seconds after ready before memory is read: the watches have started, nothing is pending."""


@dataclass(frozen=True)
class Sample:
    ready_s: float
    rss_mb: float
    hwm_mb: float


def cluster(nodes: int, pods: int | None) -> ClusterSpec:
    """The training pods of the default spec, or with `pods` the cluster topped up to that many
    pods with DaemonSet pods (six per node) and Deployment pods."""
    base = ClusterSpec(nodes=nodes, seed=3, served=True)
    if pods is None:
        return base
    busy = replace(base, busy_fraction=0.8, daemon_pods_per_node=6)
    gpu_pods = sum(1 for o in generate(replace(busy, served=False)) if o["kind"] == "Pod")
    return replace(busy, cpu_pods=max(0, pods - gpu_pods))


def memory(pid: int) -> tuple[float, float]:
    """VmRSS and VmHWM of `pid`, in MB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return (
        int(fields["VmRSS"].split()[0]) / 1024,
        int(fields["VmHWM"].split()[0]) / 1024,
    )


def ready(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def measure(where: list[str], log: Path) -> Sample:
    """Start the extender with `where` (its cluster source flags) and measure it once ready."""
    port = free_port()
    command = [sys.executable, "-m", "kube_rdma_cli", "extender", "--host", "127.0.0.1"]
    started = time.perf_counter()
    with log.open("wb") as stderr:
        process = subprocess.Popen([*command, "--port", str(port), *where], stderr=stderr)
    try:
        while not ready(port):
            if process.poll() is not None or time.perf_counter() - started > READY_WITHIN:
                raise SystemExit(f"the extender never became ready:\n{log.read_text()[-2000:]}")
            time.sleep(0.02)
        took = time.perf_counter() - started
        time.sleep(SETTLE)
        rss, hwm = memory(process.pid)
        return Sample(took, rss, hwm)
    finally:
        stop(process)


class FakeApiServer:
    """`python -m testbed.fakeapi --load SNAPSHOT` as a process, with its kubeconfig."""

    def __init__(self, snapshot: Path, kubeconfig: Path) -> None:
        command = [sys.executable, "-m", "testbed.fakeapi", "--load", str(snapshot)]
        self.process = subprocess.Popen(
            [*command, "--kubeconfig-out", str(kubeconfig)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.line = self.process.stdout.readline().strip()
        if not self.line:
            raise SystemExit("the fake apiserver did not start")

    def __enter__(self) -> FakeApiServer:
        return self

    def __exit__(self, *_: object) -> None:
        stop(self.process)


def stop(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, and SIGKILL when that is not enough within 30 s."""
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def spread(values: list[float], unit: str, digits: int) -> str:
    median = statistics.median(values)
    return f"{median:.{digits}f} {unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def run(
    spec: ClusterSpec, runs: int, folder: Path, live_only: bool = False
) -> list[tuple[str, list[Sample]]]:
    objects = generate(spec)
    pods = sum(1 for o in objects if o["kind"] == "Pod")
    snapshot, kubeconfig, log = folder / "cluster.json", folder / "kubeconfig", folder / "log"
    write_snapshot(objects, snapshot)
    del objects
    title = f"{spec.nodes:,} nodes, {pods:,} pods ({snapshot.stat().st_size / 1e6:.0f} MB)"
    print(f"\n{title}", flush=True)
    results = []
    started = time.perf_counter()
    with FakeApiServer(snapshot, kubeconfig) as api:
        took = time.perf_counter() - started
        load = Path("/proc/loadavg").read_text().split()[0]
        print(f"  {api.line} (loaded and serving after {took:.1f} s, load {load})", flush=True)
        live = [measure(["--kubeconfig", str(kubeconfig)], log) for _ in range(runs)]
    results.append((f"{title}, live", live))
    if live_only:
        print(f"  live      {_row(live)}", flush=True)
        return results
    snap = [measure(["--cluster-snapshot", str(snapshot)], log) for _ in range(runs)]
    results.append((f"{title}, snapshot", snap))
    for name, samples in results[-2:]:
        print(f"  {name.rpartition(', ')[2]:9} {_row(samples)}", flush=True)
    return results


def _row(samples: list[Sample]) -> str:
    return (
        f"ready {spread([s.ready_s for s in samples], 's', 2)}, "
        f"VmRSS {spread([s.rss_mb for s in samples], 'MB', 0)}, "
        f"VmHWM {spread([s.hwm_mb for s in samples], 'MB', 0)}"
    )


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


async def burst(nodes: int, count: int) -> None:
    from kubernetes_asyncio import client

    from extender.app import EXTENDER, Settings, create_app
    from extender.book.holds import Hold
    from extender.cluster.live import LiveSource
    from extender.gangs.identity import Gang
    from kubesim.scheduler import Job
    from testbed.fakeapi import FakeApiServer, eventually
    from testbed.net import serving

    spec = ClusterSpec(nodes=nodes, seed=3, busy_fraction=0.9)
    async with FakeApiServer() as api, api.api_client() as api_client:
        for obj in generate(spec):
            if obj["kind"] == "Node":
                api.create("nodes", obj)
            elif obj["kind"] == "Pod":
                api.create("pods", obj, obj["metadata"]["namespace"])
        source = LiveSource(client.CoreV1Api(api_client))
        app = create_app(Settings(), source)
        async with serving(app):
            started = time.perf_counter()
            await eventually(source.ready, within=600.0)
            print(f"  {nodes:,} nodes: ready after {time.perf_counter() - started:.1f} s")
            scheduler = app[EXTENDER].scheduler
            cluster = source.cluster
            planned = Job("burst-planned", "team-llm", members=4, gpus=8, arrival=0, duration=1)
            # more RDMA devices a member than any node has: it keeps waiting, and holding
            waiting = Job("burst-held", "team-llm", 64, 8, arrival=0, duration=1, rdma=64)
            for pod in planned.pods() + waiting.pods():
                api.create("pods", pod, "team-llm")
            await eventually(lambda: cluster.pod("team-llm", "burst-held-63") is not None)
            names = list(cluster.views)
            first = cluster.pod("team-llm", "burst-planned-00")
            assert first is not None
            scheduler.filter(first, names)
            slots = list(scheduler.planner.plans[("team-llm", "burst-planned")].slots)
            # The held gang waits (its member seen, as a filter call notes it) and holds 4
            # nodes, as a preemption's or a drain's hold does; it is not filtered again here.
            member = cluster.pod("team-llm", "burst-held-00")
            assert member is not None
            gang = scheduler.gang(member)
            assert isinstance(gang, Gang)
            scheduler.contention.note(gang, scheduler.view(member), member)
            held = frozenset(names[-4:])
            now = scheduler.contention.now()
            scheduler.holds.put(Hold(gang.key, 0, "leaf", held, 32, now))
            filler = Job("burst", "team-web", members=count, gpus=1, arrival=0, duration=1)
            pods = [dict(p, metadata={**p["metadata"], "annotations": {}}) for p in filler.pods()]
            last = pods[-1]["metadata"]["name"]
            load = loadavg()
            cpu, started = time.process_time(), time.perf_counter()
            for i in range(0, len(pods), 500):
                for pod in pods[i : i + 500]:
                    api.create("pods", pod, "team-web")
                await asyncio.sleep(0)
            created = time.perf_counter() - started
            # kube-scheduler keeps asking for the planned gang while the cache catches up
            while cluster.pod("team-web", last) is None:
                scheduler.filter(first, names)
                await asyncio.sleep(0.01)
            caught_up = time.perf_counter() - started
            cpu = time.process_time() - cpu
            missing = sum(1 for p in pods if cluster.pod("team-web", p["metadata"]["name"]) is None)
            await asyncio.sleep(app[EXTENDER].settings.sweep_interval * 2)  # a sweep has run
            kept = scheduler.planner.plans.get(("team-llm", "burst-planned"))
            same_plan = kept is not None and list(kept.slots) == slots
            hold_kept = scheduler.holds.get(gang.key) is not None
            placed = gang.key in scheduler.planner.plans
    print(
        f"  {count:,} pods created in {created:.2f} s ({count / created:,.0f}/s); the cache held "
        f"every one after {caught_up:.2f} s ({count / caught_up:,.0f} events/s absorbed, "
        f"{cpu:.2f} s CPU for server and extender together); {missing} missing; "
        f"plan kept, same nodes: {same_plan}; hold kept: {hold_kept} (its gang placed: "
        f"{placed}); load {load}"
    )
    assert missing == 0, f"{missing} pods never reached the cache"
    assert same_plan, "the planned gang's plan was lost or changed while the cache caught up"
    assert hold_kept, "the hold was lost while the cache caught up"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--only-pods", action="store_true", help="skip the training-pods-only cluster"
    )
    parser.add_argument("--live-only", action="store_true", help="skip snapshot mode")
    parser.add_argument("--burst", type=int, help="pods created at once (no memory figures)")
    args = parser.parse_args()
    if args.burst:
        logging.getLogger("kube_rdma").setLevel(logging.ERROR)
        print(f"watch burst of {args.burst:,} pod creations, in process")
        asyncio.run(burst(args.nodes, args.burst))
        return
    print(f"median (min-max) of {args.runs} runs; the extender's memory after ready")
    with tempfile.TemporaryDirectory() as folder:
        for pods in (args.pods,) if args.only_pods else (None, args.pods):
            run(cluster(args.nodes, pods), args.runs, Path(folder), args.live_only)


if __name__ == "__main__":
    main()
