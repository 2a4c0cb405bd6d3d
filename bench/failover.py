"""Failover under load: the serving scheduler pod SIGKILLed again and again while a contended
stream of gangs is placed on a 256-node cluster (testbed/failover.py runs it: the fake apiserver,
two emulated kube-schedulers with Lease leader election, each with the real extender beside it,
all as processes).

Reported: the takeover time of each kill (until the other pod holds the Lease, and until the next
pod is bound), p50 and max; the gangs placed whole; and what must be zero: pods bound twice,
nodes given more GPUs than they have, gangs left partly bound.

    python -m bench.failover [--kills 20] [--gangs 48] [--nodes 256] [--lease 15 10 2]

The default lease is kube-scheduler's (15 s, renew deadline 10 s, retry 2 s), so a run of 20
kills takes several minutes; `--lease 4 3 1` shows the same behaviour faster.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys

from kube_rdma.kube.lease import LeaseTiming
from testbed.failover import FailoverRun, Report, failover


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.failover")
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--leaf-size", type=int, default=16)
    parser.add_argument("--gangs", type=int, default=48)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--lease", type=float, nargs=3, default=(15.0, 10.0, 2.0))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    run = FailoverRun(
        nodes=args.nodes,
        leaf_size=args.leaf_size,
        gangs=args.gangs,
        sizes=(4, 8, 12, 16, 24, 32),
        kills=args.kills,
        hold=2.0,
        timing=LeaseTiming(*args.lease),
        barrier_timeout=4.0,
        http_timeout=5.0,
        seed=args.seed,
        deadline=3600.0,
    )
    report = asyncio.run(failover(run))
    print(describe(run, report))
    clean = not (report.bound_twice or report.overcommitted or report.partly_bound)
    return 0 if clean and report.gangs_whole == report.gangs.keys() else 1


def describe(run: FailoverRun, report: Report) -> str:
    timing = run.timing
    lines = [
        f"{run.nodes} nodes, gangs {run.gangs} at a time of "
        f"{min(run.sizes)}-{max(run.sizes)} pods x 8 GPUs, "
        f"lease {timing.duration:g}/{timing.renew_deadline:g}/{timing.retry_period:g} s",
        f"kills: {len(report.takeovers)} (gang plans in flight at each: "
        f"{', '.join(map(str, report.plans_at_kills))})",
        f"takeover, kill to the other pod holding the Lease: {_spread(report.takeovers)}",
        f"kill to the next pod bound: {_spread(report.first_binds)}",
        f"gangs placed whole: {len(report.gangs_whole)} of {len(report.gangs)} "
        f"({sum(report.gangs.values())} pods)",
        f"pods bound twice: {len(report.bound_twice)}; nodes over-committed: "
        f"{len(report.overcommitted)}; gangs left partly bound: {len(report.partly_bound)}",
        f"run: {report.elapsed:.0f} s",
    ]
    return "\n".join(lines)


def _spread(seconds: list[float]) -> str:
    if not seconds:
        return "none"
    return f"p50 {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s"


if __name__ == "__main__":
    sys.exit(main())
