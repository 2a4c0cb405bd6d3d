"""`--topology`, `--topology-object` and `--domain-label` on the command line: the levels they
give the planner, and a clear refusal of what cannot work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from extender.gangs.planner import GangSettings
from extender.gangs.settings import level_settings
from extender.levels.watched import TopologyRef
from kube_rdma_cli.dispatch import build_parser


def parse(*argv: str) -> object:
    return build_parser().parse_args(["extender", "--cluster-snapshot", "c.json", *argv])


CLIQUE = ("nvidia.com/gpu.clique",)
GKE = tuple(f"cloud.google.com/gce-topology-{n}" for n in ("host", "subblock", "block"))
KUBE_RDMA = ("kube-rdma.io/leaf", "kube-rdma.io/spine", "topology.kubernetes.io/zone")
TOPOGRAPH_NVLINK = ("accelerator.topograph.run/domain", *CLIQUE)


@pytest.mark.parametrize(
    ("topology", "labels", "domains", "nvlink", "source"),
    [
        (None, None, KUBE_RDMA, CLIQUE, "kube-rdma"),
        ("gke", None, GKE, CLIQUE, "gke"),
        (None, ["rack", "row"], ("rack", "row"), CLIQUE, "--domain-label"),
        ("topograph", ["rack"], ("rack",), TOPOGRAPH_NVLINK, "topograph with --domain-label"),
        ("auto", None, KUBE_RDMA, CLIQUE, "auto"),
    ],
)
def test_level_settings(
    topology: str | None,
    labels: list[str] | None,
    domains: tuple[str, ...],
    nvlink: tuple[str, ...],
    source: str,
) -> None:
    settings = level_settings(GangSettings(), topology, labels)
    assert (settings.domains, settings.nvlink, settings.topology) == (domains, nvlink, source)


def test_the_flags_parse() -> None:
    args = parse("--topology", "eks", "--topology-object", "kueue:default")
    assert (args.topology, args.topology_object) == ("eks", TopologyRef("kueue", "default"))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--topology", "azure"], "argument --topology: invalid choice: 'azure'"),
        (
            ["--topology-object", "volcano:x"],
            "argument --topology-object: --topology-object 'volcano:x': expected kueue:NAME (a "
            "Kueue Topology) or kai:NAME (a KAI Topology)",
        ),
    ],
)
def test_bad_flags_say_what_is_wrong(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(*argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_watched_object_needs_a_live_cluster(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "kube_rdma_cli", "extender"]
    args += ["--cluster-snapshot", str(tmp_path / "c.json"), "--port", "0"]
    args += ["--topology-object", "kai:cluster-topology"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    line = json.loads(done.stderr.strip().splitlines()[-1])
    assert line["msg"] == "--topology-object is watched: it needs --kubeconfig or --in-cluster"
