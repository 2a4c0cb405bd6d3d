"""`kube-rdma simulate` from the command line: the table, the JSON, and one line for bad input."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kube_rdma_cli.dispatch import main
from testbed.clustergen import write_snapshot
from testbed.clustergen.dra import dra_form
from tests.kubesim.simulate.clusters import leaf_node


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.json"
    write_snapshot([leaf_node(f"n-{i}", "a") for i in range(8)], path)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_json_has_one_entry_per_variant(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "--cluster", str(cluster), "--generate", "jobs=20,seed=3", "--sweep",
        "binpack=0,4", "--json",
    )  # fmt: skip
    document = orjson.loads(out)
    assert status == 0
    assert [v["name"] for v in document["variants"]] == ["kube-scheduler", "binpack=0", "binpack=4"]
    assert document["workload"]["jobs"] == 20
    assert {v["jobs"] for v in document["variants"]} == {20}
    assert sorted(document["variants"][0]) == [
        "classes", "extender", "gangs", "gangs_in_one_domain", "gangs_in_one_domain_by_level",
        "gangs_placed", "gpu_nic_levels",
        "jobs", "jobs_placed", "jobs_unplaced", "name", "native_gangs", "never_fit",
        "partial_gangs",
        "preemption", "simulated_hours", "time_to_place_seconds", "utilisation", "wall_seconds",
        "weights",
    ]  # fmt: skip
    assert document["version"] == 2


def test_the_table_names_every_variant(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "--cluster", str(cluster), "--generate", "jobs=5")
    lines = out.splitlines()
    assert status == 0
    assert lines[0] == (
        "8 nodes, 64 GPUs (64 free); 5 jobs, 5 pods, 0 gangs (generate seed=0,jobs=5, "
        "network=macvlan from the nodes' link layer)"
    )
    assert lines[1].split() == ["kube-scheduler", "extender"]
    assert lines[2].split() == ["jobs", "placed", "5", "of", "5", "5", "of", "5"]


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        (
            {"w.yaml": "jobs:\n- {arrival: 0, gpus: 8, duration: 60}\n"
                       "- {arrival: 1, gpus: -1, duration: 5}\n"},
            ["--workload", "{w.yaml}"],
            "{w.yaml}: jobs[1].gpus: Input should be greater than or equal to 0",
        ),
        (
            {"w.yaml": "jobs:\n- {arrival: 0, gpus: 8, duration: 60, color: red}\n"},
            ["--workload", "{w.yaml}"],
            "{w.yaml}: jobs[0]: unknown key 'color'; the keys are name, namespace, arrival, "
            "pods, gpus, rdma, duration, gang, network, priority, preemptionPolicy, "
            "annotations, dra",
        ),
        (
            # misspelt, so `duration` is missing too: the unknown key is the one to name
            {"w.yaml": "jobs:\n- {arrival: 0, gpus: 8, duraton: 60}\n"},
            ["--workload", "{w.yaml}"],
            "{w.yaml}: jobs[0]: unknown key 'duraton' (did you mean duration?); the keys are "
            "name, namespace, arrival, pods, gpus, rdma, duration, gang, network, priority, "
            "preemptionPolicy, annotations, dra",
        ),
        (
            {"w.yaml": "job:\n- {arrival: 0, gpus: 8, duration: 60}\n"},
            ["--workload", "{w.yaml}"],
            "{w.yaml}: top level: unknown key 'job' (did you mean jobs?); the keys are jobs",
        ),
        (
            {"heavy.yaml": "weights:\n  affinity: -1\n"},
            ["--generate", "jobs=5", "--weights", "{heavy.yaml}"],
            "{heavy.yaml}: weights.affinity: Input should be greater than or equal to 0",
        ),
        (
            {},
            ["--generate", "jobs=5", "--sweep", "speed=1,2"],
            "--sweep speed=1,2: unknown criterion 'speed'; one of affinity, rate, binpack, "
            "locality",
        ),
        (
            {},
            ["--generate", "jobs=5,colour=red"],
            "--generate: unknown key 'colour'; the keys are jobs, seed, hours, load, gangs, dra, "
            "network, priorities",
        ),
        (
            {},
            ["--generate", "jbos=5"],
            "--generate: unknown key 'jbos' (did you mean jobs?); the keys are jobs, seed, "
            "hours, load, gangs, dra, network, priorities",
        ),
        (
            {},
            ["--generate", "jobs"],
            "--generate: 'jobs' is not KEY=VALUE with KEY one of jobs, seed, hours, load, "
            "gangs, dra, network, priorities",
        ),
        ({}, ["--generate", "jobs=5,dra=2"], "--generate: dra must be 0 to 1, got 2"),
        (
            {},
            ["--generate", "jobs=5,dra=0.5"],
            "jobs ask for devices through claims, and the cluster has no DeviceClass of GPUs and "
            "one of RDMA NICs (with ResourceSlices publishing such devices): add them to the "
            "snapshot, or run the jobs without dra",
        ),
        (
            {"w.yaml": "jobs:\n- {arrival: 0, gpus: 8, duration: 60, dra: true}\n"},
            ["--workload", "{w.yaml}"],
            "jobs ask for devices through claims, and the cluster has no DeviceClass of GPUs and "
            "one of RDMA NICs (with ResourceSlices publishing such devices): add them to the "
            "snapshot, or run the jobs without dra",
        ),
        (
            {},
            ["--generate", "jobs=5,priorities=high:0.2/urgent:0.8"],
            "--generate: priorities=high:0.2/urgent:0.8: 'urgent:0.8' is not PRIORITY:SHARE with "
            "PRIORITY a number or one of high, medium, low",
        ),
        (
            {},
            ["--generate", "jobs=5,priorities=high:0.2/low:0.7"],
            "--generate: priorities' shares must add up to 1, got 0.9",
        ),
        (
            {"w.yaml": "jobs:\n- {arrival: 0, gpus: 8, duration: 60, preemptionPolicy: never}\n"},
            ["--workload", "{w.yaml}"],
            "{w.yaml}: jobs[0].preemptionPolicy: Input should be 'PreemptLowerPriority' or "
            "'Never'",
        ),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(
    cluster: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    args: list[str],
    message: str,
) -> None:
    paths = {}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        paths["{" + name + "}"] = str(tmp_path / name)
    for key, value in paths.items():
        args = [a.replace(key, value) for a in args]
        message = message.replace(key, value)
    status, out, err = run(capsys, "--cluster", str(cluster), *args)
    assert (status, out, err) == (2, "", f"kube-rdma simulate: {message}\n")


def test_a_dra_cluster_reports_how_its_claim_pods_were_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "dra.json"
    write_snapshot(dra_form([leaf_node(f"n-{i}", "a") for i in range(4)]), cluster)
    workload = tmp_path / "jobs.yaml"
    workload.write_text(
        "jobs:\n"
        "- {name: gang, arrival: 0, pods: 2, gpus: 8, duration: 600, dra: true}\n"
        "- {name: single, arrival: 1, gpus: 4, duration: 600, dra: true}\n"
        "- {name: plugin, arrival: 2, gpus: 4, duration: 600}\n"
    )
    status, out, _ = run(capsys, "--cluster", str(cluster), "--workload", str(workload))
    lines = out.splitlines()
    assert status == 0
    assert lines[0] == f"4 nodes, 32 GPUs (32 free); 3 jobs, 4 pods, 1 gangs ({workload})"
    # The claim pods fit the DRA nodes, and so does the pod asking for nvidia.com/gpu: the GPU
    # class serves the GPUs by that name (`extendedResourceName`, KEP-5004).
    assert lines[2].split() == ["jobs", "placed", "3", "of", "3", "3", "of", "3"]
    assert [" ".join(line.split()) for line in lines[-4:]] == [
        "DRA pods bound 3 3",
        "DRA pods bound, claims reserved 3 3",
        "DRA pods bound unreserved (want 0) 0 0",
        "devices allocated twice (want 0) 0 0",
    ]


def test_a_broken_snapshot_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text("kind: Node\nmetadata: {name: n-1}\n---\nkind: Node\nmetadata: []\n")
    status, _, err = run(capsys, "--cluster", str(path), "--generate", "jobs=5")
    assert (status, err) == (
        2,
        f"kube-rdma simulate: {path}: object 2 (Node): metadata is not a map\n",
    )
