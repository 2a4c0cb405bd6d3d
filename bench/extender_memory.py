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
"""

from __future__ import annotations

import argparse
import http.client
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--only-pods", action="store_true", help="skip the training-pods-only cluster"
    )
    parser.add_argument("--live-only", action="store_true", help="skip snapshot mode")
    args = parser.parse_args()
    print(f"median (min-max) of {args.runs} runs; the extender's memory after ready")
    with tempfile.TemporaryDirectory() as folder:
        for pods in (args.pods,) if args.only_pods else (None, args.pods):
            run(cluster(args.nodes, pods), args.runs, Path(folder), args.live_only)


if __name__ == "__main__":
    main()
