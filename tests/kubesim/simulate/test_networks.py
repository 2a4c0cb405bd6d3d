"""The network mode of a simulation's jobs and the link layer of its nodes: a generated workload
takes the nodes' link layer unless told otherwise, and jobs whose network most nodes lack are a
warning, printed before the run and kept in the report."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import main
from kubesim.simulate.workload import Shape, parse_generate
from testbed.builders.nodes import hgx, node
from tests.kubesim.simulate.clusters import snapshot


def ib_node(name: str) -> Json:
    return node(name, hgx("InfiniBand"), labels={keys.LEAF: "a", keys.SPINE: "spine-0"})


@pytest.fixture
def mostly_ib(tmp_path: Path) -> Path:
    """Three InfiniBand nodes and one RoCE node, as `make demo`'s cluster has them."""
    roce = node("roce-0", hgx("Ethernet"), labels={keys.LEAF: "a", keys.SPINE: "spine-0"})
    return snapshot(tmp_path, [*(ib_node(f"ib-{i}") for i in range(3)), roce]).path


def test_the_shape_counts_the_nodes_of_each_link_layer(tmp_path: Path, mostly_ib: Path) -> None:
    from kubesim.simulate.cluster import load_cluster

    shape = load_cluster(mostly_ib).shape()
    assert shape.link_layers == (("Ethernet", 1), ("InfiniBand", 3))
    assert shape.network() == "ib"


@pytest.mark.parametrize(
    ("link_layers", "given", "network"),
    [
        ((("Ethernet", 1), ("InfiniBand", 3)), "", "ib"),
        ((("Ethernet", 1), ("InfiniBand", 3)), ",network=macvlan", "macvlan"),
        ((("Ethernet", 4),), "", "macvlan"),
        ((("Ethernet", 4),), ",network=ib", "ib"),
        ((), "", "macvlan"),  # no topology documents: the webhook's default
    ],
)
def test_generated_jobs_take_the_nodes_link_layer_unless_told(
    link_layers: tuple[tuple[str, int], ...], given: str, network: str
) -> None:
    shape = Shape(32, 4, "rdma/hca", link_layers)
    jobs = parse_generate(f"jobs=10,seed=1{given}").stream(shape)
    assert {j.network for j in jobs} == {network}


def test_a_network_most_nodes_lack_is_a_warning_before_the_run_and_in_the_report(
    mostly_ib: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "simulate",
        "--cluster",
        str(mostly_ib),
        "--generate",
        "jobs=2,seed=1,gangs=0,network=macvlan",
    ]
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    warning = (
        "2 of 2 jobs use network=macvlan (Ethernet RDMA ports), which 1 node(s) have where 3 "
        "have InfiniBand: the extender places these jobs only on those 1, kube-scheduler "
        "anywhere (without a usable NIC). Set network=ib (--generate network=..., or network: "
        "in each job of the workload file) unless that is what you mean to try"
    )
    assert err == f"kube-rdma simulate: warning: {warning}\n"
    document = orjson.loads(out)
    assert document["warnings"] == [warning]
    assert document["workload"]["source"] == "generate jobs=2,seed=1,gangs=0,network=macvlan"
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"warning: {warning}"


def test_a_generated_workload_says_the_network_it_took(
    mostly_ib: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "--cluster", str(mostly_ib), "--generate", "jobs=2,seed=1", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    document = orjson.loads(out)
    assert (err, document["warnings"]) == ("", [])
    assert document["workload"]["source"] == (
        "generate jobs=2,seed=1, network=ib from the nodes' link layer"
    )
    # A workload file's jobs are checked alike.
    workload = tmp_path / "jobs.yaml"
    workload.write_text("jobs:\n- {arrival: 0, gpus: 8, duration: 60, network: macvlan}\n")
    assert main(["simulate", "--cluster", str(mostly_ib), "--workload", str(workload)]) == 0
    assert capsys.readouterr().err.startswith(
        "kube-rdma simulate: warning: 1 of 1 jobs use network=macvlan"
    )
