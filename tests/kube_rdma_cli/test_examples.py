"""The files under examples/ that the docs' commands use, run through those very commands as a
user would type them from the repository's root: the weights validate, each NCCL log gets the
verdict its name promises, and the workload is one `kube-rdma simulate` schedules."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from extender.weights import CRITERIA
from kubesim.simulate.workload import JobEntry
from testbed.clustergen import write_snapshot
from tests.kubesim.simulate.clusters import leaf_node

ROOT = Path(__file__).resolve().parents[2]


def kube_rdma(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    return subprocess.run(
        [sys.executable, "-m", "kube_rdma_cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
    )


def test_the_weights_validate_and_name_every_criterion() -> None:
    done = kube_rdma("validate", "weights", "examples/weights.yaml")
    assert (done.returncode, done.stdout) == (
        0,
        "examples/weights.yaml: ok (weights: affinity 4, rate 1, binpack 2, locality 2)\n",
    )
    weights = yaml.safe_load((ROOT / "examples" / "weights.yaml").read_text())["weights"]
    assert tuple(weights) == CRITERIA


@pytest.mark.parametrize(
    ("name", "status", "transport", "gdr", "errors"),
    [
        ("good", 0, "IB", True, []),
        ("socket-fallback", 1, "Socket", None, []),
        ("warn-only", 1, "RoCE", None, ["completion error 12"]),
    ],
)
def test_each_nccl_log_gets_its_verdict(
    name: str, status: int, transport: str, gdr: bool | None, errors: list[str]
) -> None:
    log = f"examples/nccl-logs/{name}.log"
    done = kube_rdma("diagnose", log, "--json")
    answer = json.loads(done.stdout)
    assert (done.returncode, done.stderr) == (status, "")
    assert (answer["transport"], answer["gdr"]) == (transport, gdr)
    assert [e["error"] for e in answer["errors"]] == errors
    assert answer["rdma"] is (status == 0)
    text = kube_rdma("diagnose", log)
    assert text.returncode == status
    assert text.stdout.startswith("NCCL 2.2")


def test_the_nccl_logs_are_in_nccls_line_shapes() -> None:
    """Every line but the leading comment is one NCCL prints: `host:pid:tid [rank] NCCL INFO`,
    or a WARN after its blank line, or the bare version line NCCL_DEBUG=WARN prints."""
    for log in sorted((ROOT / "examples" / "nccl-logs").glob("*.log")):
        comment, *lines = log.read_text().splitlines()
        assert comment.startswith("# example: ")
        for line in lines:
            shaped = (
                line == ""
                or line.startswith("NCCL version ")
                or " NCCL INFO " in line
                or " NCCL WARN " in line
            )
            assert shaped, f"{log.name}: {line!r}"
            if line and not line.startswith("NCCL version"):
                assert re.match(r"[\w.-]+:\d+:\d+ \[\d+\] ", line), f"{log.name}: {line!r}"


def test_the_workload_parses_and_simulates(tmp_path: Path) -> None:
    entries = yaml.safe_load((ROOT / "examples" / "workload.yaml").read_text())["jobs"]
    assert [JobEntry.model_validate(e).name for e in entries] == [
        "pretrain", "finetune", "eval", "notebook"
    ]  # fmt: skip
    cluster = tmp_path / "cluster.json"
    write_snapshot([leaf_node(f"n-{i}", "a") for i in range(8)], cluster)
    done = kube_rdma(
        "simulate", "--cluster", str(cluster), "--workload", "examples/workload.yaml",
        "--weights", "examples/weights.yaml", "--json",
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    document = json.loads(done.stdout)
    assert document["workload"]["jobs"] == 4
    assert {v["jobs_placed"] for v in document["variants"]} == {4}
