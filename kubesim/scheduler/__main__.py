"""`python -m kubesim.scheduler`: the emulated kube-scheduler as a process of its own, one
replica of a highly available pair.

Like kube-scheduler with `leaderElection.leaderElect: true`, it starts its informers at once (a
standby's cache is warm), then waits for the Lease; once it holds it, it schedules until it
stops renewing for the renew deadline, and then exits with status 1 (kube-scheduler exits on a
lost lease, and the kubelet restarts it). It prints one line when its informers have synced
and one when it leads, with the time, so that a harness can follow the takeovers. SIGINT or
SIGTERM stops it with status 0, the Lease handed back if it held it (kube-scheduler's
ReleaseOnCancel), so that the standby need not wait it out.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import time
from collections.abc import Coroutine, Sequence
from typing import Any

from kube_rdma.core.tasks import cancelled
from kube_rdma.kube.lease import LeaseElector, LeaseTiming
from kubesim.scheduler.apiserver import Apiserver
from kubesim.scheduler.config import SchedulerConfig
from kubesim.scheduler.scheduler import EmulatedScheduler

IDLE_SECONDS = 0.005


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kubesim.scheduler", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--apiserver", required=True, help="base URL of the apiserver")
    parser.add_argument("--extender", required=True, help="base URL of the extender")
    parser.add_argument("--identity", required=True, help="this replica's name in the Lease")
    parser.add_argument("--lease", default="kube-rdma/rdma-scheduler", help="NAMESPACE/NAME")
    parser.add_argument("--lease-duration", type=float, default=15.0)
    parser.add_argument("--renew-deadline", type=float, default=10.0)
    parser.add_argument("--retry-period", type=float, default=2.0)
    parser.add_argument("--http-timeout", type=float, default=5.0, help="extender httpTimeout")
    parser.add_argument("--percentage-of-nodes-to-score", type=int, default=100)
    parser.add_argument("--backoff-initial", type=float, default=1.0, help="seconds")
    parser.add_argument("--backoff-max", type=float, default=10.0, help="seconds")
    parser.add_argument(
        "--preempt-verb",
        action="store_true",
        help="the extender has preemptVerb: preempt (kube-scheduler's preemption asks it)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return asyncio.run(run(args))


async def run(args: argparse.Namespace) -> int:
    config = SchedulerConfig(
        http_timeout=args.http_timeout,
        percentage_of_nodes_to_score=args.percentage_of_nodes_to_score,
        backoff_initial=args.backoff_initial,
        backoff_max=args.backoff_max,
        preempt_via_extender=args.preempt_verb,
    )
    stop = stop_on_signals()
    timing = LeaseTiming(args.lease_duration, args.renew_deadline, args.retry_period)
    namespace, _, name = args.lease.partition("/")
    async with EmulatedScheduler(args.apiserver, args.extender, config) as scheduler:
        print(f"synced {time.time():.3f}", flush=True)
        apiserver = scheduler.connections.apiserver
        assert isinstance(apiserver, Apiserver)  # an HTTP apiserver, given its URL above
        leases = apiserver.leases()
        elector = LeaseElector(leases, namespace, name, args.identity, timing)
        if not await until_stopped(elector.acquire(), stop):
            return 0
        print(f"leading {time.time():.3f}", flush=True)
        holding = asyncio.create_task(elector.hold())
        while not holding.done():
            if stop.is_set():
                await cancelled(holding)
                await elector.release()
                print(f"stopped {time.time():.3f}", flush=True)
                return 0
            if await scheduler.step() is None:
                await asyncio.sleep(IDLE_SECONDS)
    print(f"lost the lease {time.time():.3f}", flush=True)
    return 1


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def until_stopped(work: Coroutine[Any, Any, None], stop: asyncio.Event) -> bool:
    """Run `work` to its end (True), unless `stop` is set first (False, `work` cancelled)."""
    task, stopped = asyncio.create_task(work), asyncio.create_task(stop.wait())
    await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    await cancelled(stopped)
    if task.done():
        task.result()
        return True
    await cancelled(task)
    return False


if __name__ == "__main__":
    raise SystemExit(main())
