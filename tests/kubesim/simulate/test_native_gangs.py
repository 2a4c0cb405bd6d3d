"""kube-scheduler's own gang scheduling in the simulation: a gang with a PodGroup is bound whole
or not at all, by the PodGroup scheduling cycle (1.36) or by Permit alone (1.35's pod-by-pod
path), and `--native-gangs` adds the variant and the PodGroups."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest

from extender.weights import DEFAULT
from kube_rdma_cli.dispatch import main
from kubesim.scheduler import Job, SchedulerConfig
from kubesim.simulate import run as run_module
from kubesim.simulate.cluster import SimCluster
from kubesim.simulate.metrics import measure
from kubesim.simulate.run import Settings, Variant, simulate
from kubesim.simulate.variants import NATIVE, PLAIN, build_variants, with_pod_groups
from tests.kubesim.simulate.clusters import job, leaf_node, snapshot

NATIVE_VARIANT = Variant(NATIVE, None, native_gangs=True)


def blocked_gang(tmp_path: Path) -> tuple[SimCluster, list[Job]]:
    """Two nodes, one busy for the first 1800 s; a gang of two arrives at 10 s."""
    cluster = snapshot(tmp_path, [leaf_node(f"n-{i}", "a") for i in range(2)])
    jobs = with_pod_groups(
        [job("busy", 1, 8, arrival=0.0, duration=1800.0), job("gang", 2, 8, arrival=10.0)]
    )
    return cluster, jobs


def test_jobs_get_pod_groups_only_for_gangs() -> None:
    jobs = with_pod_groups([job("one", 1, 8, 0.0), job("two", 2, 8, 0.0)])
    assert jobs[0].pod_group_object() is None
    group = jobs[1].pod_group_object()
    assert group is not None
    assert group["spec"] == {"schedulingPolicy": {"gang": {"minCount": 2}}}
    pod = jobs[1].pods()[0]
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "two"}
    assert pod["metadata"]["annotations"]["kube-rdma.io/gang-size"] == "2"


def test_kube_scheduler_alone_binds_half_the_gang(tmp_path: Path) -> None:
    cluster, jobs = blocked_gang(tmp_path)
    result = measure(simulate(cluster, jobs, Variant(PLAIN, None), Settings()), jobs, cluster)
    assert result["partial_gangs"]["gangs"] == 1
    assert result["native_gangs"] is False


@pytest.mark.parametrize("cycle", [True, False], ids=["pod-group-cycle", "permit-only"])
def test_native_gangs_bind_the_gang_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cycle: bool
) -> None:
    if not cycle:  # 1.35: GangScheduling's Permit holds the assumed member, pod by pod
        config = run_module.scheduler_config

        def permit_only(variant: Variant, settings: Settings) -> SchedulerConfig:
            return dataclasses.replace(config(variant, settings), pod_group_cycle=False)

        monkeypatch.setattr(run_module, "scheduler_config", permit_only)
    cluster, jobs = blocked_gang(tmp_path)
    run = simulate(cluster, jobs, NATIVE_VARIANT, Settings())
    result = measure(run, jobs, cluster)
    assert result["partial_gangs"]["gangs"] == 0
    assert result["jobs_placed"] == 2
    assert result["native_gangs"] is True
    assert run.emulator.jobs is not None
    gang = next(s for s in run.emulator.jobs.states() if s.job.name == "gang")
    assert gang.first_started is not None
    assert 1800.0 <= gang.first_started < 1900.0
    messages = {a.message for a in run.emulator.attempts if a.outcome == "unschedulable"}
    if cycle:
        assert any(m.startswith("pod group is unschedulable: minCount (2)") for m in messages)
    else:
        assert "rejected due to timeout after waiting 5m0s at plugin GangScheduling" in messages


def test_the_extender_with_pod_groups_places_the_gang(tmp_path: Path) -> None:
    cluster, jobs = blocked_gang(tmp_path)
    result = measure(
        simulate(cluster, jobs, Variant("extender", DEFAULT), Settings()), jobs, cluster
    )
    assert result["partial_gangs"]["gangs"] == 0
    assert result["jobs_placed"] == 2


def test_build_variants_puts_native_gangs_second() -> None:
    names = [v.name for v in build_variants([], None, native_gangs=True)]
    assert names == [PLAIN, NATIVE, "extender"]


def test_the_command_compares_three_schedulers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, _ = blocked_gang(tmp_path)
    path = str(cluster.path)
    args = ["simulate", "--cluster", path, "--generate", "jobs=4,hours=1,gangs=1", "--json"]
    assert main([*args, "--native-gangs"]) == 0
    document = orjson.loads(capsys.readouterr().out)
    assert [v["name"] for v in document["variants"]] == [PLAIN, NATIVE, "extender"]
    assert [v["native_gangs"] for v in document["variants"]] == [False, True, False]
