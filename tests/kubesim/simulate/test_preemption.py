"""Priorities and preemption in the simulation: a preempted job restarts from scratch and its
GPU-hours are lost, a gang kube-scheduler breaks is counted, the report's classes flag a gang
that never placed, and a generated workload of mixed priorities runs in every variant."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from extender.weights import DEFAULT
from kubesim.simulate.cluster import SimCluster
from kubesim.simulate.metrics import measure
from kubesim.simulate.report import table
from kubesim.simulate.run import Settings, Variant, simulate
from kubesim.simulate.simulation import run_variants
from kubesim.simulate.workload import parse_generate
from testbed.clustergen import ClusterSpec, generate
from tests.kubesim.simulate.clusters import job, leaf_node, snapshot

PLAIN = Variant("kube-scheduler", None)
EXTENDER = Variant("extender", DEFAULT)
HIGH = 1000


def class_of(result: dict[str, object], priority: int, size: str) -> dict[str, object]:
    found = [c for c in result["classes"] if (c["priority"], c["size"]) == (priority, size)]  # type: ignore[attr-defined]
    assert len(found) == 1
    return found[0]  # type: ignore[no-any-return]


@pytest.mark.parametrize("variant", [PLAIN, EXTENDER])
def test_a_preempted_job_starts_again_and_its_run_so_far_is_lost(
    tmp_path: Path, variant: Variant
) -> None:
    # One node: a low-priority job runs from 0; at 1800 s a high one needs the node.
    cluster = snapshot(tmp_path, [leaf_node("n-0", "a")])
    jobs = [
        job("low", 1, 8, arrival=0.0, duration=3600.0),
        dataclasses.replace(job("high", 1, 8, arrival=1800.0, duration=600.0), priority=HIGH),
    ]
    run = simulate(cluster, jobs, variant, Settings())
    result = measure(run, jobs, cluster)
    assert result["preemption"] == {
        "preempted_pods": 1,
        "by_kube_scheduler": 1,
        "gpu_hours_lost": 4.0,  # 8 GPUs for the 1800 s it ran
        "partial_gangs": 0,
        "held_hours": 0.0,
    }
    assert run.emulator.jobs is not None
    low = next(s for s in run.emulator.jobs.states() if s.job.name == "low")
    # placed at once, then again once the high job is done (it ran 600 s from about 1801 s)
    assert low.first_started == pytest.approx(0.0, abs=0.1)
    assert low.started is not None
    assert 2401.0 <= low.started < 2410.0
    # A failed cycle (10 ms), the 1 s backoff, and the cycle on its nominated node (10 ms).
    assert class_of(result, HIGH, "1")["time_to_place_seconds"]["max"] == pytest.approx(  # type: ignore[index]
        1.02, abs=0.005
    )


def test_kube_scheduler_alone_breaks_a_gang_and_it_is_counted(tmp_path: Path) -> None:
    # Two nodes run a gang of two; a high-priority pod takes one member's node at 600 s, and
    # the other member holds its GPUs until the taken node is free again at about 1200 s.
    cluster = snapshot(tmp_path, [leaf_node(f"n-{i}", "a") for i in range(2)])
    jobs = [
        job("gang", 2, 8, arrival=0.0, duration=3600.0),
        dataclasses.replace(job("high", 1, 8, arrival=600.0, duration=600.0), priority=HIGH),
    ]
    result = measure(simulate(cluster, jobs, PLAIN, Settings()), jobs, cluster)
    assert result["preemption"]["partial_gangs"] == 1
    assert result["preemption"]["gpu_hours_lost"] == pytest.approx(16 * 600 / 3600, abs=0.01)
    assert class_of(result, 0, "2-8")["partial_gangs_by_preemption"] == 1


def test_the_classes_flag_a_gang_that_never_placed(tmp_path: Path) -> None:
    # Two nodes; a gang of four can never fit: it counts at its wait so far, unplaced.
    cluster = snapshot(tmp_path, [leaf_node(f"n-{i}", "a") for i in range(2)])
    jobs = [
        job("small", 1, 8, arrival=0.0, duration=60.0),
        dataclasses.replace(job("huge", 4, 8, arrival=100.0, duration=60.0), priority=HIGH),
    ]
    document = run_variants(cluster, jobs, "test", [PLAIN], Settings(patience=600.0))
    result = document["variants"][0]
    huge = class_of(result, HIGH, "2-8")
    assert (huge["jobs"], huge["unplaced"]) == (1, 1)
    assert huge["time_to_place_seconds"] == {"p50": 600.0, "p95": 600.0, "max": 600.0}
    assert (result["jobs_unplaced"], result["time_to_place_seconds"]["max"]) == (1, 600.0)
    assert document["version"] == 2
    rows = dict(
        re.split(r"\s{2,}", line, maxsplit=1) for line in table(document).splitlines()[2:-1]
    )
    assert rows["wait p50/p95/max, priority 1000, 2-8 pods"] == (
        "10.0 min / 10.0 min / 10.0 min (1 unplaced)"
    )
    assert rows["wait p50/p95/max, priority 0, 1 pods"] == "0.0 s / 0.0 s / 0.0 s"


def test_a_generated_workload_of_mixed_priorities(tmp_path: Path) -> None:
    objects = generate(ClusterSpec(nodes=16, nodes_per_leaf=8, busy_fraction=0.25, seed=2))
    cluster = snapshot(tmp_path, objects)
    generated = parse_generate("jobs=40,seed=5,hours=2,load=1.2,priorities=high:0.25/low:0.75")
    jobs = generated.stream(cluster.shape())
    assert {j.priority for j in jobs} == {1000, 0}
    results = {
        v.name: measure(simulate(cluster, jobs, v, Settings(patience=3600.0)), jobs, cluster)
        for v in (PLAIN, EXTENDER)
    }
    for result in results.values():
        assert sum(c["jobs"] for c in result["classes"]) == 40
        assert {c["priority"] for c in result["classes"]} == {1000, 0}
    assert results["kube-scheduler"]["preemption"]["by_kube_scheduler"] > 0


def test_priorities_do_not_change_the_rest_of_a_generated_stream(tmp_path: Path) -> None:
    cluster: SimCluster = snapshot(tmp_path, [leaf_node(f"n-{i}", "a") for i in range(8)])
    plain = parse_generate("jobs=30,seed=4").stream(cluster.shape())
    mixed = parse_generate("jobs=30,seed=4,priorities=500:0.5/0:0.5").stream(cluster.shape())
    assert [dataclasses.replace(j, priority=0) for j in mixed] == plain
    assert {j.priority for j in mixed} == {500, 0}


def test_a_gang_the_extender_holds_nodes_for_is_reported_held(tmp_path: Path) -> None:
    # 16 nodes kept busy by one 8-GPU job every 50 s, each running 10 minutes; a 16-pod gang
    # arrives at 5 minutes. The extender holds nodes for it; its records say for how long.
    cluster = snapshot(tmp_path, [leaf_node(f"n-{i:02d}", "a") for i in range(16)])
    jobs = [job(f"small-{i:03d}", 1, 8, arrival=50.0 * i, duration=600.0) for i in range(60)]
    jobs.append(job("big", 16, 8, arrival=300.0, duration=600.0))
    result = measure(simulate(cluster, jobs, EXTENDER, Settings()), jobs, cluster)
    big = class_of(result, 0, "9-64")
    assert big["unplaced"] == 0
    assert 0 < big["held_hours"] * 3600 <= big["time_to_place_seconds"]["max"]  # type: ignore[index, operator]
    assert result["preemption"]["held_hours"] == big["held_hours"]
