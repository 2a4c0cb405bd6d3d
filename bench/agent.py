"""Node agent scan time: a full scan of the 8-GPU / 8-NIC fixture tree, and the encode.

The fixture is built on the local disk (testbed/builders/sysfs_tree.py) with full 255-entry GID
tables per port, as mlx5 devices expose them, so the scan reads the same number of files a real
node's does. Real sysfs is served from kernel memory; a disk-backed fixture in the page cache is
a fair stand-in for the file-count-bound cost.

    python -m bench.agent [--runs 200]        (make bench)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent.health import HealthTracker
from agent.sysfs import scan
from kube_rdma.core.topology import encode
from testbed.builders.sysfs_tree import hgx_8gpu_8nic


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        hgx_8gpu_8nic(root)
        files = sum(1 for p in root.rglob("*") if p.is_file())
        health = HealthTracker()
        scan(root)  # warm the page cache
        scans, encodes = [], []
        for _ in range(args.runs):
            started = time.perf_counter()
            topology = health.update(scan(root))
            scanned = time.perf_counter()
            document = encode(topology)
            scans.append((scanned - started) * 1000)
            encodes.append((time.perf_counter() - scanned) * 1000)
    scans.sort()
    print(f"agent bench: 8 GPUs, 8 NICs, 255-entry GID tables, {files} files, {args.runs} scans")
    p50, p99 = statistics.median(scans), scans[int(0.99 * len(scans))]
    print(f"  scan p50 / p99 ms    {p50:7.2f} / {p99:.2f}   (goal < 50 ms)")
    print(f"  encode p50 ms        {statistics.median(encodes):7.2f}   ({len(document)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
