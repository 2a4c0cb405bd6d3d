"""`python -m testbed.fakeapi`: the fake apiserver as a process of its own, serving a snapshot.

It lets the real product run against a known cluster from outside, exactly as it runs against a
real one: `kube-rdma extender|agent run|webhook --kubeconfig FILE`, where FILE is the kubeconfig
this process writes. One line on stdout says where it listens and what it serves (a test or a
script waits for it); SIGTERM or SIGINT stops it with exit status 0. A snapshot it cannot serve
is refused before it listens, with the file and the problem on stderr and exit status 2. Like a
new cluster, it always serves the namespaces default, kube-node-lease, kube-public and
kube-system. Workload objects in the snapshot (batch Jobs, PyTorchJobs, MPIJobs, JobSets, Volcano
Jobs and PodGroups) are served as by a cluster with their CRDs installed. `--outage AT:SECONDS`
(repeatable) makes it unreachable for SECONDS from AT seconds after it starts listening (refusing
connections, or answering 503 with `--outage-503`), and `--slow SECONDS` delays every answer: the
faults a cache must ride out (faults.py), for a whole run. `--termination SECONDS` keeps an
evicted pod Terminating that long before it is deleted (evictions.py).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from testbed.fakeapi.errors import ApiError
from testbed.fakeapi.server import FakeApiServer
from testbed.fakeapi.snapshot import Snapshot, SnapshotError, implied_namespaces, read_snapshot
from testbed.fakeapi.store import RESOURCES
from testbed.fakeapi.workloads import WORKLOAD_RESOURCES

PROGRAM: Final = "python -m testbed.fakeapi"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 (default): any free port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--load", type=Path, metavar="SNAPSHOT", help="Nodes, Pods and workloads (JSON/YAML)"
    )
    parser.add_argument(
        "--kubeconfig-out", type=Path, metavar="FILE", help="write a kubeconfig for this server"
    )
    parser.add_argument(
        "--outage",
        type=_outage,
        action="append",
        default=[],
        metavar="AT:SECONDS",
        help="be unreachable for SECONDS from AT seconds after start (repeatable)",
    )
    parser.add_argument(
        "--outage-503", action="store_true", help="answer 503 during outages, not refuse"
    )
    parser.add_argument("--slow", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument(
        "--termination",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="an evicted pod on a node stays Terminating this long before it is deleted",
    )
    return parser


def _outage(text: str) -> tuple[float, float]:
    at, _, seconds = text.partition(":")
    try:
        return float(at), float(seconds)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected AT:SECONDS, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        server, snapshot = load(args.load)
    except SnapshotError as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 2
    if snapshot.skipped:
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(snapshot.skipped.items()))
        print(f"{PROGRAM}: not served, so left out: {kinds}", file=sys.stderr)
    return asyncio.run(serve(server, args, served(server)))


def load(path: Path | None) -> tuple[FakeApiServer, Snapshot]:
    """A server holding `path` (when given), with the Namespaces a cluster would have and the
    workload resources (batch Jobs, the training CRDs) the snapshot has objects of;
    SnapshotError names what cannot be served."""
    every = {**RESOURCES, **WORKLOAD_RESOURCES}
    snapshot = read_snapshot(path, every) if path is not None else Snapshot()
    used = {plural for plural, _ in snapshot.objects}
    server = FakeApiServer({k: r for k, r in every.items() if k in RESOURCES or k in used})
    snapshot.objects += [("namespaces", ns) for ns in implied_namespaces(snapshot.objects)]
    try:
        server.restore_owned(snapshot.objects)  # read from the file: nothing else holds them
    except ApiError as e:  # the same name twice
        raise SnapshotError(f"{path}: {e.message}") from None
    return server, snapshot


def served(server: FakeApiServer) -> str:
    """What the server holds, as in "8 namespaces, 8 nodes, 21 pods"."""
    # Counted, not listed: `objects` deep-copies every object (minutes at 200,000 pods).
    counts = {plural: server.count(plural) for plural in sorted(server.resources)}
    return ", ".join(f"{count} {plural}" for plural, count in counts.items())


async def serve(server: FakeApiServer, args: argparse.Namespace, contents: str) -> int:
    """Listen until SIGTERM or SIGINT; 1 when it cannot listen."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start(args.host, args.port)
    except OSError as e:
        print(f"{PROGRAM}: cannot listen: {e.strerror}", file=sys.stderr)
        return 1
    try:
        if args.kubeconfig_out is not None:
            server.write_kubeconfig(args.kubeconfig_out)
        print(f"fake apiserver listening on {server.host}: {contents}", flush=True)
        server.faults.delay = args.slow
        server.termination.seconds = args.termination
        outages = [asyncio.create_task(_later(server, o, not args.outage_503)) for o in args.outage]
        await stop.wait()
        for outage in outages:
            outage.cancel()
    finally:
        await server.stop()
    return 0


async def _later(server: FakeApiServer, outage: tuple[float, float], refuse: bool) -> None:
    at, seconds = outage
    await asyncio.sleep(at)
    print(f"fake apiserver down for {seconds:g}s", flush=True)
    await server.outage(seconds, refuse=refuse)
    print("fake apiserver up again", flush=True)
