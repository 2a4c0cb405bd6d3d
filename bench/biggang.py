"""Gangs of the size real jobs have: one gang of 256, 512 or 1,024 pods x 8 GPUs on a 5,000-node
cluster, with singletons competing for the same nodes, through the real extender (live mode,
against the HTTP-level fake apiserver) and an emulated kube-scheduler (kubesim/scheduler) whose
cycles each spend 20 ms in in-tree plugins, with the production barrier settings (a member's
bind request waits 4 s, the gang 30 s for its next member) and kube-scheduler's default backoff.

At 20 ms a cycle and more, the members of such a gang reach /bind over far more than one bind
request's timeout. Reported per gang size:
- placed whole, and from how many plans (1: in one pass, no plan dropped and redone);
- time to place: the gang's first pod created to its last bound;
- arrival spread: the first member's bind request to the last member's first one;
- the longest partly-bound span: some but not all members bound;
- bind requests that timed out at the barrier (the member kept its place), and that failed else;
- singletons placed, and the cycles run.

    python -m bench.biggang [--sizes 256 512 1024] [--singletons 200]

With `--in-process --nodes N`, the gangs (alone, on a free cluster of N nodes, in leaves of 32)
go through the extender's own handlers in one process, without HTTP or an emulated
kube-scheduler, which at 20,000 nodes and more spend far more than the extender: each member's
filter and prioritize over every node's name (percentageOfNodesToScore 100), as decoded from a
request body and encoded as an answer, against the do-nothing floor of bench/scale.py on the same
bodies. Reported per gang size: placed whole from one plan (each member passed exactly its
planned node, the first member's call made the only plan), the leaves it spans against the
fewest that could hold it, and the CPU per member, real and floor.

    python -m bench.biggang --in-process --nodes 20000 --sizes 2048 4096 8192 [--nominate]

With `--nominate`, the extender nominates the members to their planned nodes
(`--nominate-members`) and every member after the first is sent as kube-scheduler sends a pod
with a nominated node: a filter of that one name, no prioritize.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from extender.app import EXTENDER, Settings, create_app
from extender.cluster.live import LiveSource
from kubesim.scheduler import EmulatedScheduler, Job, Jobs, SchedulerConfig, Workload, bound_node
from testbed.clustergen import ClusterSpec, generate
from testbed.fakeapi import FakeApiServer, eventually
from testbed.net import serving

CLUSTER = ClusterSpec(nodes=5000, seed=11, nodes_per_leaf=32, leaves_per_spine=8, busy_fraction=0.0)
CONFIG = SchedulerConfig(percentage_of_nodes_to_score=100, in_tree_time=0.020)
"""kube-scheduler's defaults otherwise: httpTimeout 5 s, backoff 1 s to 10 s."""


async def run(size: int, singletons: int, limit: float) -> dict[str, Any]:
    gang = Job(f"llm-{size}", "team-llm", members=size, gpus=8, arrival=0.0, duration=3600.0)
    others = Workload(
        seed=3, jobs=singletons, mean_interarrival=0.05, duration=(3600.0, 3600.0), gang_fraction=0
    )
    jobs = Jobs((gang, *others.stream()))
    async with FakeApiServer() as api, api.api_client() as api_client:
        for obj in generate(CLUSTER):
            if obj["kind"] == "Node":
                api.create("nodes", obj)
        source = LiveSource(client.CoreV1Api(api_client))
        app = create_app(Settings(), source)
        async with serving(app) as url:
            await eventually(source.ready, within=300.0)
            async with EmulatedScheduler(api.host, url, CONFIG, workload=jobs) as scheduler:
                started = time.perf_counter()
                everyone = size + singletons

                def all_bound() -> bool:
                    pods = scheduler.informer.pods()
                    return len(pods) == everyone and all(bound_node(p) for p in pods)

                finished = await scheduler.run_until(all_bound, timeout=limit)
                elapsed = time.perf_counter() - started
                plans = sum(1 for d in app[EXTENDER].planner.history if d.gang.name == gang.name)
    return summarize(scheduler, gang, finished, elapsed, plans)


def summarize(
    scheduler: EmulatedScheduler, gang: Job, finished: bool, elapsed: float, plans: int
) -> dict[str, Any]:
    record = scheduler.recorder.gangs.get((gang.namespace, gang.name))
    members = [b for b in scheduler.binds if b.pod[1].startswith(f"{gang.name}-")]
    firsts: dict[str, float] = {}
    for b in members:
        firsts.setdefault(b.pod[1], b.started)
    spans = [
        (end or scheduler.clock.now()) - start for start, end in (record.spells if record else [])
    ]
    attempts = sum(1 for a in scheduler.attempts if a.pod[1].startswith(f"{gang.name}-"))
    return {
        "finished": finished,
        "elapsed": elapsed,
        "placed": record is not None and record.placed is not None,
        "plans": plans,
        "place": (record.placed - record.created) if record and record.placed else float("nan"),
        "spread": max(firsts.values()) - min(firsts.values()) if firsts else float("nan"),
        "partial": max(spans, default=0.0),
        "kept": sum(1 for b in members if "keeps its place" in b.error),
        "failed": sum(1 for b in members if b.error and "keeps its place" not in b.error),
        "attempts": attempts,
        "cycles": len(scheduler.attempts),
    }


def in_process(
    nodes: int,
    sizes: list[int],
    max_gang_size: int | None = None,
    members: int | None = None,
    nominate: bool = False,
) -> None:
    """With `members`, only the first that many members of each gang are sent: the leaves
    are then the plan's (the first member makes it), the CPU the mean over those sent. With
    `nominate`, the extender nominates the members to their planned nodes (written into the
    model, the writes charged to the first member) and each later member is sent as
    kube-scheduler sends a pod with a nominated node: its filter with that one name, and no
    prioritize (one feasible node is not scored)."""
    import gc

    from extender.cluster.nominations import ModelNominations
    from extender.cluster.snapshot import SnapshotSource
    from extender.cluster.trim import trim_node
    from testbed.clustergen import MAX_NODES
    from testbed.clustergen.spec import LEAF_LABEL, SPINE_LABEL

    spec = replace(CLUSTER, nodes=nodes, wide_addresses=nodes > MAX_NODES)
    started = time.perf_counter()
    source = SnapshotSource([trim_node(o) for o in generate(spec) if o["kind"] == "Node"])
    gc.collect()
    gc.freeze()
    names = list(source.cluster.views)
    print(f"  {nodes:,} nodes built in {time.perf_counter() - started:.0f} s", flush=True)
    for size in sizes:
        settings = Settings()
        if max_gang_size is not None:
            contention = replace(settings.contention, max_gang_size=max_gang_size)
            settings = replace(settings, contention=contention)
        writes = ModelNominations(source.cluster) if nominate else None
        app = create_app(settings, source, nominations=writes)
        scheduler = app[EXTENDER].scheduler
        gang = Job(f"llm-{size}", "team-llm", members=size, gpus=8, arrival=0.0, duration=1.0)
        pods = gang.pods()
        for i, pod in enumerate(pods):
            pod["metadata"]["uid"] = f"{gang.name}-{i}"  # as the apiserver gives each
            source.cluster.upsert_pod(pod)
        usable = usable_leaves(scheduler, source.cluster, names)
        chosen: dict[str, str] = {}
        sent = pods if members is None else pods[: max(members, 1)]

        cpu, floor, first = asyncio.run(
            send(scheduler, source.cluster, gang.namespace, sent, names, chosen, nominate)
        )
        made = [d for d in scheduler.planner.history if d.gang.name == gang.name]
        plans = len(made)
        domain = f"{made[0].domain} (a leaf could take {made[0].narrowest_fit})" if made else "-"
        plan = scheduler.planner.plans.get((gang.namespace, gang.name))
        whole = len(chosen) == size and len(set(chosen.values())) == size
        placed = list(chosen.values()) if plan is None or members is None else plan.slots
        leaves = {source.cluster.views[n].labels.get(LEAF_LABEL) for n in placed}
        fewest = fewest_leaves(usable, size)
        spines = {source.cluster.views[n].labels.get(SPINE_LABEL) for n in placed}
        if len(spines) == 1:
            within = fewest_leaves(usable, size, spines.pop())
            fewest_text = f"fewest {fewest}, {within} in its spine"
        else:
            inside = {k: n for k, n in usable.items() if k[0] in spines}
            fewest_text = (
                f"fewest {fewest}, {fewest_leaves(inside, size)} in its spines; "
                f"{len(spines)} spines (fewest {fewest_spines(usable, size)})"
            )
        load = Path("/proc/loadavg").read_text().split()[0]
        print(
            f"  gang of {size:,} x 8 GPUs ({len(sent):,} sent): placed whole {whole}, "
            f"plans {plans}, "
            f"planned {plan is not None} in {domain}, leaves {len(leaves)} ({fewest_text}); "
            f"first member {first:.2f} s CPU; then per member "
            f"{cpu / max(len(sent) - 1, 1) * 1000:.2f} ms CPU against the floor's "
            f"{floor / max(len(sent) - 1, 1) * 1000:.2f} ms; load {load}",
            flush=True,
        )
        for pod in pods:
            source.cluster.delete_pod(("team-llm", pod["metadata"]["name"]))
        del app, scheduler


async def send(
    scheduler: Any,
    cluster: Any,
    namespace: str,
    sent: list[Any],
    names: list[str],
    chosen: dict[str, str],
    nominate: bool,
) -> tuple[float, float, float]:
    """Each member's calls in turn, as kube-scheduler sends them; the CPU of the members after
    the first, real and floor, and the first's; the node each member passed alone, into
    `chosen`."""
    import orjson

    from bench.scale import floor_filter, floor_prioritize
    from extender import protocol

    cpu = floor = first = 0.0
    for i, pod in enumerate(sent):
        asked = names
        cached = cluster.pod(namespace, pod["metadata"]["name"]) or pod
        nominated = (cached.get("status") or {}).get("nominatedNodeName")
        if nominate and i > 0 and nominated:
            pod, asked = cached, [nominated]
        body = orjson.dumps({"Pod": pod, "NodeNames": asked})
        c0 = time.thread_time()
        args = protocol.decode_args(body)
        outcome = scheduler.filter(args.pod, args.names)
        answer = protocol.filter_result(args, outcome.passed, outcome.failed, outcome.unresolvable)
        orjson.dumps(answer)
        if len(asked) > 1:
            args = protocol.decode_args(body)
            answer_scores(scheduler, args)
        if i == 0 and nominate:
            await scheduler.planner.nominator.drain()
        c1 = time.thread_time()
        floor_filter(body)
        if len(asked) > 1:
            floor_prioritize(body)
        c2 = time.thread_time()
        if i == 0:
            first = c1 - c0
        else:
            cpu += c1 - c0
            floor += c2 - c1
        if len(outcome.passed) == 1:
            chosen[pod["metadata"]["name"]] = outcome.passed[0]
    return cpu, floor, first


def answer_scores(scheduler: Any, args: Any) -> bytes:
    """The prioritize answer as the handler sends it (extender/app.py)."""
    scores: bytes = scheduler.answer_scores(args.pod, args.names).json
    return scores


def usable_leaves(scheduler: Any, cluster: Any, names: list[str]) -> dict[tuple[str, str], int]:
    """(spine, leaf) -> the nodes a lone pod of the members' shape may use there (rails down,
    no agent: not all 32 of a leaf), asked before the gang holds any."""
    from testbed.clustergen.spec import LEAF_LABEL, SPINE_LABEL

    probe = Job("probe", "team-llm", members=1, gpus=8, arrival=0.0, duration=1.0).pods()[0]
    usable: dict[tuple[str, str], int] = {}
    for name in scheduler.filter(probe, names).passed:
        labels = cluster.views[name].labels
        key = (labels.get(SPINE_LABEL), labels.get(LEAF_LABEL))
        usable[key] = usable.get(key, 0) + 1
    return usable


def fewest_leaves(usable: dict[tuple[str, str], int], size: int, spine: str | None = None) -> int:
    """The fewest leaves (of `spine` if given) that hold `size` members, fullest first."""
    held = 0
    counts = [n for (s, _), n in usable.items() if spine is None or s == spine]
    for count, capacity in enumerate(sorted(counts, reverse=True), 1):
        held += capacity
        if held >= size:
            return count
    return -1


def fewest_spines(usable: dict[tuple[str, str], int], size: int) -> int:
    """The fewest spines that hold `size` members, fullest first."""
    per_spine: dict[tuple[str, str], int] = {}
    for (spine, _), count in usable.items():
        per_spine[(spine, spine)] = per_spine.get((spine, spine), 0) + count
    return fewest_leaves(per_spine, size)


def limited(result: dict[str, Any]) -> str:
    return "" if result["finished"] else " (stopped at --limit)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--singletons", type=int, default=200)
    parser.add_argument("--limit", type=float, default=900.0, help="seconds per run at most")
    parser.add_argument("--in-process", action="store_true", help="no HTTP, no kube-scheduler")
    parser.add_argument("--nodes", type=int, default=CLUSTER.nodes, help="with --in-process")
    parser.add_argument(
        "--max-gang-size", type=int, help="with --in-process: the extender's (default 4,096)"
    )
    parser.add_argument(
        "--nominate",
        action="store_true",
        help="with --in-process: members nominated to their planned nodes (--nominate-members)",
    )
    parser.add_argument(
        "--members",
        type=int,
        help="with --in-process: send only the first N members (1: the plan alone)",
    )
    args = parser.parse_args()
    if args.in_process:
        logging.getLogger("kube_rdma").setLevel(logging.ERROR)
        sent = "nominated members one name each" if args.nominate else "every name in each call"
        print(f"big gangs in process: {args.nodes:,} free nodes, {sent}")
        in_process(args.nodes, args.sizes, args.max_gang_size, args.members, args.nominate)
        return 0
    logging.getLogger("kube_rdma").setLevel(logging.ERROR)  # a line per timed-out bind request
    print(
        f"big gangs: {CLUSTER.nodes} nodes, {CONFIG.in_tree_time * 1000:.0f} ms in-tree per cycle, "
        f"{args.singletons} singletons competing"
    )
    header = (
        "gang", "placed", "plans", "to place", "arrivals over", "longest partial",
        "req. timeouts", "other bind errors", "gang cycles", "all cycles", "run",
    )  # fmt: skip
    print("  ".join(header))
    for size in args.sizes:
        r = asyncio.run(run(size, args.singletons, args.limit))
        row = (
            str(size), str(r["placed"]), str(r["plans"]), f"{r['place']:.1f} s",
            f"{r['spread']:.1f} s", f"{r['partial']:.2f} s", str(r["kept"]), str(r["failed"]),
            str(r["attempts"]), str(r["cycles"]), f"{r['elapsed']:.0f} s" + limited(r),
        )  # fmt: skip
        print("  ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
