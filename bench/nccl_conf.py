"""`kube-rdma nccl-conf` resolution time: one pod's view of an 8-rail RoCE host, read and resolved.

The host view (testbed/builders/gid_tables.py) has 8 devices with 255-entry GID tables, as mlx5
devices expose them, in two layouts: a quiet host (link-local and the host's rail address in
use, the rest empty) and a crowded macvlan host (125 pods' addresses per device: every entry but
the last in use, so nearly every type and netdev file is read too). The pod holds an address on
each rail, so all 8 devices match. One run is what the init container does: read sysfs and
/proc/net, resolve, render the file.

    python -m bench.nccl_conf [--runs 200]        (make bench)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent.nccl_conf import Resolution, Wanted
from agent.nccl_conf_command import Request, resolve_pod
from testbed.builders.gid_tables import build_view, rail_host
from testbed.builders.proc_net import Interface, Namespace, write_proc

RAILS = 8
LAYOUTS = {"quiet host": 0, "crowded macvlan host": 125}


def pod_namespace(host: int) -> Namespace:
    """Calico's eth0 and one macvlan address per rail, `host` the last byte on every rail."""
    rails = [Interface(f"net{r + 1}", [f"192.168.{r}.{host}/24"]) for r in range(RAILS)]
    return Namespace([Interface("eth0", ["10.244.1.7/32"]), *rails], ("eth0", "169.254.1.1"))


def measure(root: Path, pods_per_device: int, runs: int) -> tuple[list[float], Resolution]:
    build_view(root / "sys", rail_host(RAILS, pods_per_device))
    # The last pod on a crowded host (its GIDs at the end of the table), the host's own rail
    # addresses on a quiet one.
    last = pods_per_device + 9 if pods_per_device else 1
    proc = write_proc(root / "proc", pod_namespace(last))
    request = Request(root / "sys", proc, None, Wanted(), "fail", None, root / "log")
    resolution = resolve_pod(request)  # warm the page cache
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        resolution = resolve_pod(request)
        _ = resolution.text
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times), resolution


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    print(f"nccl-conf bench: {RAILS} RoCE devices, 255-entry GID tables, {args.runs} runs")
    for name, pods in LAYOUTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            times, resolution = measure(Path(tmp), pods, args.runs)
        p50, p99 = statistics.median(times), times[int(0.99 * len(times))]
        outcome = resolution.lines[0] if resolution.lines else resolution.problem
        print(f"  {name:<22} p50 / p99 ms {p50:7.2f} / {p99:.2f}   ({outcome})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
