"""Shared clusters on the simulator, scaled down from bench/shared_clusters.py: a big gang among
a stream of small jobs is placed within the hold time plus one job's run, whole; a high-priority
gang on a full cluster is placed whole by evicting whole units, where kube-scheduler alone
breaks gangs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kubesim.scheduler import Job
from kubesim.simulate.metrics import measure
from kubesim.simulate.run import Settings, Variant, simulate
from testbed.builders.nodes import hgx, node
from tests.kubesim.simulate.clusters import snapshot

PLAIN = Variant("kube-scheduler", None)
EXTENDER = Variant("extender", DEFAULT)
HOLD_AFTER = 120.0


def job(name: str, pods: int, arrival: float, duration: float, priority: int = 0) -> Job:
    return Job(
        name=name,
        namespace="team",
        members=pods,
        gpus=8,
        arrival=arrival,
        duration=duration,
        cpu_per_gpu=0,
        memory_per_gpu_gi=0,
        priority=priority,
    )


def nodes(count: int, per_leaf: int) -> list[Json]:
    return [
        node(f"n-{i:02d}", hgx(), labels={keys.LEAF: f"leaf-{i // per_leaf}", keys.SPINE: "s"})
        for i in range(count)
    ]


def of_class(result: dict[str, Any], priority: int, size: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        c for c in result["classes"] if (c["priority"], c["size"]) == (priority, size)
    )
    return found


def test_a_big_gang_among_small_jobs_is_placed_whole_within_the_hold_and_one_run(
    tmp_path: Path,
) -> None:
    cluster = snapshot(tmp_path, nodes(16, 4))
    jobs = [job(f"small-{i:03d}", 1, 50.0 * i, 600.0) for i in range(72)]
    jobs.append(job("big", 16, 300.0, 1800.0))
    result = measure(simulate(cluster, jobs, EXTENDER, Settings()), jobs, cluster)
    big = of_class(result, 0, "9-64")
    assert big["unplaced"] == 0
    assert big["time_to_place_seconds"]["max"] <= HOLD_AFTER + 660
    assert result["partial_gangs"]["gangs"] == 0
    assert big["held_hours"] > 0


def test_a_high_priority_gang_on_a_full_cluster_evicts_whole_units_only(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, nodes(32, 8))
    jobs = [job(f"train-{i}", 4, float(i), 36000.0) for i in range(4)]
    jobs += [job(f"single-{i:02d}", 1, 10.0 + i, 36000.0) for i in range(16)]
    jobs.append(job("urgent", 8, 600.0, 1800.0, priority=1000))
    with_extender = measure(simulate(cluster, jobs, EXTENDER, Settings()), jobs, cluster)
    urgent = of_class(with_extender, 1000, "2-8")
    assert urgent["unplaced"] == 0
    assert with_extender["preemption"]["partial_gangs"] == 0
    assert with_extender["preemption"]["preempted_pods"] >= 8
    gangs_hit = of_class(with_extender, 0, "2-8")["preempted_pods"]
    assert gangs_hit % 4 == 0, "gangs of 4 are evicted whole or not at all"
    alone = measure(simulate(cluster, jobs, PLAIN, Settings()), jobs, cluster)
    assert of_class(alone, 1000, "2-8")["unplaced"] == 0
