"""What a variant's run measured, as the JSON the report prints (schema: docs/simulate.md).

- jobs placed: jobs all of whose pods were bound;
- partial gangs: gangs some but not all of whose members were bound, for longer than
  `TRANSIENT` (an opened barrier binds members one request at a time, a few ms apart): how many
  gangs ever, the most at once, and the GPU-hours their bound members held idle;
- time to place: a job's arrival to its last pod bound, p50 and p95 over the jobs placed;
- gangs in one network domain: gangs placed whose nodes share one leaf label;
- GPU-NIC levels: for every GPU of every pod placed, the PCIe level of its NIC in the best
  pairing on its node (extender/pairing.py), or "none" when it gets no usable NIC;
- utilisation: the share of the cluster's GPUs bound to pods, sampled over simulated time;
- never fit: pods unbound at the end, counted by the last reason the scheduler gave.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from extender.pairing import profile, rails
from kube_rdma.core.topology import Level
from kubesim.scheduler import Job, bound_node, pod_key
from kubesim.simulate.cluster import SimCluster
from kubesim.simulate.run import Run

TRANSIENT = 1.0
"""Seconds a gang may be partly bound without counting: the binds of an opened barrier."""
LEVELS = (*(level.value for level in Level), "none")
LINK_LAYERS = {"macvlan": "Ethernet", "ib": "InfiniBand"}


def measure(run: Run, jobs: list[Job], cluster: SimCluster) -> dict[str, Any]:
    emulator = run.emulator
    assert emulator.jobs is not None
    states = [*emulator.jobs.finished, *emulator.jobs.jobs.values()]
    waits = sorted(s.started - (run.start + s.job.arrival) for s in states if s.started is not None)
    recorder = emulator.recorder
    spells = [
        g for g in recorder.gangs.values() if any(_length(s, run.end) > TRANSIENT for s in g.spells)
    ]
    placed_gangs = [g for g in recorder.gangs.values() if g.placed is not None]
    total_gpus = cluster.gpus() or 1
    return {
        "name": run.variant.name,
        "extender": run.variant.weights is not None,
        "weights": None if run.variant.weights is None else run.variant.weights.as_dict(),
        "jobs": len(jobs),
        "jobs_placed": len(waits),
        "gangs": sum(j.gang for j in jobs),
        "gangs_placed": len(placed_gangs),
        "partial_gangs": {
            "gangs": len(spells),
            "max_at_once": recorder.max_partial_gangs(TRANSIENT),
            "idle_gpu_hours": round(recorder.partial_gpu_seconds() / 3600, 3),
        },
        "time_to_place_seconds": {"p50": _quantile(waits, 0.5), "p95": _quantile(waits, 0.95)},
        "gangs_in_one_domain": sum(len(g.leaves) == 1 for g in placed_gangs),
        "gpu_nic_levels": levels(run, jobs, cluster),
        "utilisation": {
            "mean": round(_mean_in_use(run.samples) / total_gpus, 4),
            "series": [[round(t / 3600, 3), round(n / total_gpus, 4)] for t, n in run.samples],
        },
        "never_fit": never_fit(run),
        "simulated_hours": round((run.end - run.start) / 3600, 3),
        "wall_seconds": round(run.wall_seconds, 2),
    }


def levels(run: Run, jobs: list[Job], cluster: SimCluster) -> dict[str, int]:
    """GPUs per GPU-NIC level over the workload's pods bound (each pod once)."""
    by_pod = {(j.namespace, name): j for j in jobs for name in j.pod_names()}
    found: Counter[str] = Counter()
    memo: dict[tuple[int, str, int], dict[str, int]] = {}
    bound = {b.pod: b.node for b in run.emulator.binds if b.ok}
    for key, node_name in bound.items():
        job = by_pod.get(key)
        node = cluster.model.cluster.node(node_name)
        if job is None or node is None or not job.gpus:
            continue
        link = LINK_LAYERS.get(job.network, "Ethernet")
        memo_key = (node.rails_key, link, job.gpus)
        if memo_key not in memo:
            got = (
                {} if node.topology is None else profile(rails(node.topology, link, None), job.gpus)
            )
            memo[memo_key] = {**got, "none": job.gpus - sum(got.values())}
        found.update(memo[memo_key])
    return {level: found[level] for level in LEVELS}


def never_fit(run: Run) -> list[dict[str, Any]]:
    """Pods left unbound, by the last reason an attempt gave, most pods first."""
    emulator = run.emulator
    last = {a.pod: a.message or a.outcome for a in emulator.attempts}
    unbound = [pod_key(p) for p in emulator.informer.pods() if not bound_node(p)]
    reasons = Counter(last.get(key, "never tried") for key in unbound)
    return [{"reason": r, "pods": n} for r, n in sorted(reasons.items(), key=lambda x: -x[1])]


def _length(spell: tuple[float, float | None], end: float) -> float:
    start, stop = spell
    return (end if stop is None else stop) - start


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(int(q * len(values)), len(values) - 1)], 3)


def _mean_in_use(samples: list[tuple[float, int]]) -> float:
    """The time-weighted mean of a step function sampled at the given times."""
    if len(samples) < 2:
        return float(samples[0][1]) if samples else 0.0
    area = sum((t1 - t0) * n for (t0, n), (t1, _) in itertools.pairwise(samples))
    span = samples[-1][0] - samples[0][0]
    return area / span if span > 0 else float(samples[-1][1])
