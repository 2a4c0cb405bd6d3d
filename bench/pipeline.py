"""Pipeline throughput: pods per second through the emulated kube-scheduler with the extender in
its cycle, as a ratio to the same run without the extender.

kube-scheduler's scheduling cycle is sequential: its own plugins' work, then the extender's
/filter and /prioritize over the nodes the in-tree pass found, one pod after another; the bind
runs in the background. So the extender's time per call adds to every cycle. Here the emulated
kube-scheduler (kubesim) runs on a simulated clock (`kubesim.simulate.run`), its own work per
cycle fixed at `--cycle-ms` (2 ms: the Go scheduler's in-tree share), with kube-scheduler's
adaptive percentage of nodes to find (max(5, 50 - nodes/125) %, at least 100 nodes) in both
runs, but for gangs with the extender 100 %, as the manifests set it (the gang planner needs
every feasible node in view). The extender is the real `Scheduler` called in the same process
through its wire encoding (kubesim/simulate/wire.py), and each call costs simulated time equal
to the CPU time the extender's side of it took (the request decoded, the call, the answer
encoded), on one extender core: a call waits while an earlier one still runs. HTTP is not in it
(bench/extender.py measures what HTTP adds per call). A single pod's bind costs the CPU time
measured for it; a gang's binds wait at the extender's barrier for their gang, and are charged
the median of the single pods' binds of the same run instead.

Two streams, each all queued at once on a generated cluster (testbed/clustergen, half of the
GPUs busy): `--pods` single pods of 1, 2, 4 or 8 GPUs, and `--gangs` gangs of `--gang-size`
8-GPU pods. Pods per second is the pods bound over the simulated seconds from the first cycle
to the last bind, and (steady) over the second half of the binds, once the extender's
per-shape tables are built (the first call of a shape judges every node); the ratio is that
with the extender over that without.

    python -m bench.pipeline [--nodes 20000] [--pods 400] [--gangs 24] [--gang-size 8]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import orjson

from extender import protocol
from extender.weights import DEFAULT
from kube_rdma.core.objects import Json
from kubesim.scheduler import Job
from kubesim.simulate import run as simulation
from kubesim.simulate.cluster import SimCluster, load_cluster
from kubesim.simulate.wire import InProcessExtender
from testbed.clustergen import MAX_NODES, ClusterSpec, generate, write_snapshot

HOUR = 3600.0
PATIENCE = 30.0
"""Simulated seconds the run goes on after the stream is queued: enough for kube-scheduler's
backoffs (1-10 s), short of retrying a pod that stays unschedulable for an hour."""


class CostedExtender(InProcessExtender):
    """The in-process extender, each call taking the simulated time its CPU took, on one core."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._free_at = 0.0
        self.spent: dict[str, list[float]] = {"filter": [], "prioritize": [], "bind": []}
        self.gang_binds = 0
        self.gang_bind_cost = 0.0
        """What a gang member's bind is charged (the single pods' median, set by the bench)."""

    async def _answer(self, verb: str, body: bytes) -> Any:
        started = time.thread_time()
        if verb in ("filter", "prioritize"):
            answer: Any = orjson.Fragment(self._encoded(verb, body))
            cost = time.thread_time() - started
        else:
            answer = await super()._answer(verb, body)
            cost = time.thread_time() - started
            if verb == "bind":
                if _is_gang_bind(body):
                    self.gang_binds += 1
                    cost = self.gang_bind_cost
                else:
                    self.spent["bind"].append(cost)
        if verb != "bind":
            self.spent.setdefault(verb, []).append(cost)
        loop = asyncio.get_running_loop()
        start = max(loop.time(), self._free_at)
        self._free_at = start + cost
        await asyncio.sleep(self._free_at - loop.time())
        return answer

    def _encoded(self, verb: str, body: bytes) -> bytes:
        """The answer's JSON, as the app's handlers make it (extender/app.py)."""
        args = protocol.decode_args(body)
        scheduler = self._scheduler
        if verb == "prioritize":
            return scheduler.answer_scores(args.pod, args.names).json
        outcome = scheduler.filter(args.pod, args.names)
        result = protocol.filter_result(args, outcome.passed, outcome.failed, outcome.unresolvable)
        return orjson.dumps(result)


def _is_gang_bind(body: bytes) -> bool:
    return b'"PodName":"gang-' in body


def percentage(gangs: bool) -> Any:
    """kubesim's configuration for a variant: kube-scheduler's adaptive percentage of nodes to
    find, but for gangs with the extender 100 %, as manifests/scheduler/configmap.yaml sets it
    (a sample of the nodes would leave out the nodes planned for the gang's other members),
    unless the extender nominates the members to their nodes (`--nominate`)."""

    def config(variant: simulation.Variant, settings: simulation.Settings) -> Any:
        found = scheduler_config(variant, settings)
        full = gangs and variant.weights is not None and not settings.nominate_members
        wanted = 100 if full else None
        return replace(found, percentage_of_nodes_to_score=wanted)

    return config


scheduler_config = simulation.scheduler_config


def streams(pods: int, gangs: int, size: int) -> dict[str, list[Job]]:
    """All queued at once; they run for an hour, longer than any run takes."""
    singles = [
        Job(f"job-{i:05d}", "bench", 1, (1, 2, 4, 8)[i % 4], arrival=0.0, duration=HOUR)
        for i in range(pods)
    ]
    together = [
        Job(f"gang-{i:04d}", "bench", size, 8, arrival=0.0, duration=HOUR) for i in range(gangs)
    ]
    return {"single pods": singles, "gangs": together}


def throughput(result: simulation.Run) -> tuple[int, float, float]:
    """Pods bound; pods per simulated second from the first cycle to the last bind; and over
    the second half of the binds only, once every shape's tables are built (steady)."""
    emulator = result.emulator
    bound = sorted(b.finished for b in emulator.binds if b.ok)
    if len(bound) < 2:
        return len(bound), 0.0, 0.0
    first = min(a.at for a in emulator.attempts)
    half = len(bound) // 2
    whole = len(bound) / max(bound[-1] - first, 1e-9)
    return len(bound), whole, (len(bound) - 1 - half) / max(bound[-1] - bound[half], 1e-9)


def one(
    cluster: SimCluster,
    jobs: list[Job],
    extender: bool,
    cycle: float,
    bind_cost: float = 0.0,
    nominate: bool = False,
) -> dict[str, Any]:
    variant = simulation.Variant("extender" if extender else "plain", DEFAULT if extender else None)
    settings = simulation.Settings(cycle=cycle, patience=PATIENCE, nominate_members=nominate)
    costed: list[CostedExtender] = []

    def build(*args: Any, **kwargs: Any) -> CostedExtender:
        found = CostedExtender(*args, **kwargs)
        found.gang_bind_cost = bind_cost
        costed.append(found)
        return found

    started = time.perf_counter()
    with (
        mock.patch.object(simulation, "InProcessExtender", build),
        mock.patch.object(simulation, "scheduler_config", percentage(jobs[0].gang)),
    ):
        result = simulation.simulate(cluster, jobs, variant, settings)
    bound, rate, steady = throughput(result)
    found: dict[str, Any] = {
        "bound": bound,
        "pods_per_s": rate,
        "steady_pods_per_s": steady,
        "wall_s": time.perf_counter() - started,
        "sampled_p50": statistics.median([a.sampled for a in result.emulator.attempts] or [0]),
    }
    if costed:
        found["cpu_ms_p50"] = {
            verb: statistics.median(spent) * 1000
            for verb, spent in costed[0].spent.items()
            if spent
        }
        found["gang_binds"] = costed[0].gang_binds
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--pods", type=int, default=400)
    parser.add_argument("--gangs", type=int, default=24)
    parser.add_argument("--gang-size", type=int, default=8)
    parser.add_argument("--cycle-ms", type=float, default=2.0)
    parser.add_argument("--busy", type=float, default=0.5, help="share of GPUs running pods")
    parser.add_argument("--streams", default="single pods,gangs", help="which, comma-separated")
    parser.add_argument(
        "--nominate",
        action="store_true",
        help="the extender nominates gang members to their planned nodes (--nominate-members); "
        "gangs keep kube-scheduler's adaptive percentage",
    )
    args = parser.parse_args()
    logging.getLogger("kube_rdma.extender").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.json"
        spec = ClusterSpec(
            nodes=args.nodes,
            seed=7,
            link_layer="mixed" if args.nodes > 256 else "Ethernet",
            busy_fraction=args.busy,
            wide_addresses=args.nodes > MAX_NODES,
        )
        write_snapshot(generate(spec), path)
        cluster = load_cluster(path)
    print(
        f"pipeline bench: {args.nodes} nodes, kube-scheduler's own work {args.cycle_ms:g} ms a "
        "cycle, adaptive percentage of nodes to find; extender calls cost their CPU time "
        "(no HTTP), one extender core"
    )
    print(
        f"  {'stream':<13}{'bound ext/plain':>16}{'nodes sent':>11}{'plain pods/s':>13}"
        f"{'extender':>9}"
        f"{'ratio':>7}{'steady':>7}{'ratio':>7}{'filter ms':>10}{'prioritize':>11}{'bind':>6}"
        f"{'wall s':>8}"
    )
    rows: dict[str, Json] = {}
    bind_cost = 0.0
    chosen = args.streams.split(",")
    for label, jobs in streams(args.pods, args.gangs, args.gang_size).items():
        if label not in chosen:
            continue
        plain = one(cluster, jobs, False, args.cycle_ms / 1000)
        served = one(cluster, jobs, True, args.cycle_ms / 1000, bind_cost, args.nominate)
        spent = served.get("cpu_ms_p50", {})
        bind_cost = spent.get("bind", bind_cost * 1000) / 1000
        ratio = served["pods_per_s"] / plain["pods_per_s"] if plain["pods_per_s"] else 0.0
        steady = served["steady_pods_per_s"]
        steady_ratio = steady / plain["steady_pods_per_s"] if plain["steady_pods_per_s"] else 0.0
        rows[label] = {"plain": plain, "extender": served, "ratio": ratio}
        bound = f"{served['bound']}/{plain['bound']}"
        print(
            f"  {label:<13}{bound:>16}{served['sampled_p50']:>11.0f}"
            f"{plain['pods_per_s']:>13.0f}{served['pods_per_s']:>9.0f}{ratio:>7.2f}"
            f"{steady:>7.0f}{steady_ratio:>7.2f}"
            f"{spent.get('filter', 0):>10.2f}{spent.get('prioritize', 0):>11.2f}"
            f"{spent.get('bind', bind_cost * 1000):>6.2f}{plain['wall_s'] + served['wall_s']:>8.1f}"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"  peak resident memory {peak:,.0f} MB, load average {load}; goal: >= 250 pods/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
