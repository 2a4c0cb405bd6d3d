"""What a variant's run measured, as the JSON the report prints (schema: docs/simulate.md).

- jobs placed: jobs all of whose pods were bound;
- partial gangs: gangs some but not all of whose members were bound, for longer than
  `TRANSIENT` (an opened barrier binds members one request at a time, a few ms apart): how many
  gangs ever, the most at once, and the GPU-hours their bound members held idle;
- time to place: a job's arrival to all its pods first bound, p50, p95 and max over every job,
  a job still waiting at the end counted at its wait so far (unplaced); and the same per
  priority and gang size class (kubesim/simulate/classes.py);
- preemption: pods of the workload deleted under a live job (preempted by kube-scheduler or
  evicted by the extender), those kube-scheduler's preemption deleted, the GPU-hours of runs
  cut short, gangs kube-scheduler's preemption left partly running, and the hours gangs were
  held by the extender (from its hold records);
- gangs in one network domain: gangs placed whose nodes share one leaf label; and by level,
  for every level the cluster's labels carry, in their own vocabulary, and the NVLink domain
  (kubesim/simulate/domains.py);
- GPU-NIC levels: for every GPU of every pod placed, the PCIe level of its NIC in the best
  pairing on its node (extender/pairing.py), or "none" when it gets no usable NIC;
- utilisation: the share of the cluster's GPUs bound to pods, sampled over simulated time;
- never fit: pods unbound at the end, counted by the last reason the scheduler gave;
- DRA, when the workload has pods with claims: their binds, those with every claim allocated on
  the node and reserved for the pod, the pods ever bound without (kubesim/simulate/
  claim_audit.py), and the devices allocated to a second claim while one held them
  (kubesim/simulate/dra.py); the last two must be 0.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from extender.pairing import profile, rails
from kube_rdma.core.topology import Level
from kubesim.scheduler import Job, bound_node, pod_key
from kubesim.simulate.claim_jobs import ClaimJob
from kubesim.simulate.classes import classes, summary
from kubesim.simulate.cluster import SimCluster
from kubesim.simulate.domains import gangs_in_one_domain
from kubesim.simulate.run import Run
from kubesim.simulate.workload import LINK_LAYERS

TRANSIENT = 1.0
"""Seconds a gang may be partly bound without counting: the binds of an opened barrier."""
LEVELS = (*(level.value for level in Level), "none")


def measure(run: Run, jobs: list[Job], cluster: SimCluster) -> dict[str, Any]:
    emulator = run.emulator
    assert emulator.jobs is not None
    states = emulator.jobs.states()
    held = run.holds.held_seconds() if run.holds is not None else {}
    overall = summary(states, run.start, run.end, held)
    recorder = emulator.recorder
    spells = [
        g for g in recorder.gangs.values() if any(_length(s, run.end) > TRANSIENT for s in g.spells)
    ]
    placed_gangs = [g for g in recorder.gangs.values() if g.placed is not None]
    total_gpus = cluster.gpus() or 1
    found = {
        "name": run.variant.name,
        "extender": run.variant.weights is not None,
        "native_gangs": run.variant.native_gangs,
        "weights": None if run.variant.weights is None else run.variant.weights.as_dict(),
        "jobs": len(jobs),
        "jobs_placed": sum(s.first_started is not None for s in states),
        "gangs": sum(j.gang for j in jobs),
        "gangs_placed": len(placed_gangs),
        "partial_gangs": {
            "gangs": len(spells),
            "max_at_once": recorder.max_partial_gangs(TRANSIENT),
            "idle_gpu_hours": round(recorder.partial_gpu_seconds() / 3600, 3),
        },
        "time_to_place_seconds": overall["time_to_place_seconds"],
        "jobs_unplaced": overall["unplaced"],
        "preemption": {
            "preempted_pods": overall["preempted_pods"],
            "by_kube_scheduler": sum(len(a.victims) for a in emulator.attempts),
            "gpu_hours_lost": overall["gpu_hours_lost"],
            "partial_gangs": overall["partial_gangs_by_preemption"],
            "held_hours": round(sum(held.values()) / 3600, 3),
        },
        "classes": classes(states, run.start, run.end, held),
        "gangs_in_one_domain": sum(len(g.leaves) == 1 for g in placed_gangs),
        "gangs_in_one_domain_by_level": gangs_in_one_domain(
            (g.nodes for g in placed_gangs), cluster.nodes
        ),
        "gpu_nic_levels": levels(run, jobs, cluster),
        "utilisation": {
            "mean": round(_mean_in_use(run.samples) / total_gpus, 4),
            "series": [[round(t / 3600, 3), round(n / total_gpus, 4)] for t, n in run.samples],
        },
        "never_fit": never_fit(run),
        "simulated_hours": round((run.end - run.start) / 3600, 3),
        "wall_seconds": round(run.wall_seconds, 2),
    }
    if any(isinstance(j, ClaimJob) for j in jobs):
        found["dra"] = dra(run)
    return found


def dra(run: Run) -> dict[str, Any]:
    audit, store = run.claims, run.dra
    assert audit is not None
    assert store is not None
    return {
        "pods_bound": audit.bound,
        "pods_bound_with_claims_reserved": audit.bound_reserved,
        "pods_bound_unreserved": len(audit.unreserved),
        "devices_double_allocated": len(store.double_allocations),
        "problems": sorted(
            [f"pod {ns}/{name}: {why}" for (ns, name), why in audit.unreserved.items()]
            + [
                f"device {'/'.join(d)}: held by {a[0]}/{a[1]}, allocated to {b[0]}/{b[1]} too"
                for d, a, b in store.double_allocations
            ]
        ),
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


def _mean_in_use(samples: list[tuple[float, int]]) -> float:
    """The time-weighted mean of a step function sampled at the given times."""
    if len(samples) < 2:
        return float(samples[0][1]) if samples else 0.0
    area = sum((t1 - t0) * n for (t0, n), (t1, _) in itertools.pairwise(samples))
    span = samples[-1][0] - samples[0][0]
    return area / span if span > 0 else float(samples[-1][1])
