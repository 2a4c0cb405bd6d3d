"""`kube-rdma acceptance verdict` on nccl-tests outputs in the shapes real runs print
(tests/fixtures/nccl-tests: each file's first line names the published run its shape follows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kube_rdma.core.topology import Nic, Port, Topology
from kube_rdma_cli.dispatch import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nccl-tests"
H100_HOSTS = ["gpu-h100-017", "gpu-h100-018"]
BELOW_300 = "is below the expected 300 GB/s (--min-busbw)"

CASES = [
    # 2 nodes x 8 H100 over InfiniBand with GPUDirect RDMA, mpirun --tag-output prefixes
    (
        "h100-ib-2node.txt",
        {
            "program": "all_reduce_perf",
            "ranks": 16,
            "hosts": H100_HOSTS,
            "avg_busbw": 177.9165,
            "max_busbw": 374.57,
            "max_busbw_bytes": 8589934592,
            "wrong": 0,
            "out_of_bounds": 0,
            "transport": "IB",
            "gdr": True,
            "expected_busbw": 300.0,
            "expected_basis": "--min-busbw",
            "verdict": "pass",
            "reasons": [],
        },
    ),
    # 2 nodes x 4 A100 over RoCE without GPUDirect RDMA; no program name in the log
    (
        "a100-roce-2node.txt",
        {
            "program": None,
            "ranks": 8,
            "hosts": ["a100-roce-a", "a100-roce-b"],
            "avg_busbw": 21.53,
            "max_busbw": 38.89,
            "max_busbw_bytes": 8589934592,
            "wrong": 0,
            "out_of_bounds": 0,
            "transport": "RoCE",
            "gdr": False,
            "expected_busbw": 300.0,
            "expected_basis": "--min-busbw",
            "verdict": "fail",
            "reasons": [f"best bus bandwidth 38.89 GB/s at 8589934592 bytes {BELOW_300}"],
        },
    ),
    # old layout: broadcast_perf, no Group, no redop, `error` N/A (-c 0), over sockets
    (
        "v100-socket-old.txt",
        {
            "program": "broadcast_perf",
            "ranks": 2,
            "hosts": ["v100-node-1", "v100-node-5"],
            "avg_busbw": 0.4712,
            "max_busbw": 1.05,
            "max_busbw_bytes": 2147483648,
            "wrong": None,
            "out_of_bounds": 0,
            "transport": "Socket",
            "gdr": None,
            "expected_busbw": 300.0,
            "expected_basis": "--min-busbw",
            "verdict": "fail",
            "reasons": [
                f"best bus bandwidth 1.05 GB/s at 2147483648 bytes {BELOW_300}",
                "NCCL used TCP sockets, not RDMA (NET/Socket): run kube-rdma diagnose",
            ],
        },
    ),
    # one node, 8 x H200 over NVLink
    (
        "h200-single-node.txt",
        {
            "program": "all_reduce_perf",
            "ranks": 8,
            "hosts": ["h200-node-03"],
            "avg_busbw": 232.4965,
            "max_busbw": 482.64,
            "max_busbw_bytes": 8589934592,
            "wrong": 0,
            "out_of_bounds": 0,
            "transport": "P2P/SHM",
            "gdr": None,
            "expected_busbw": 300.0,
            "expected_basis": "--min-busbw",
            "verdict": "pass",
            "reasons": [],
        },
    ),
    # wrong values at the large sizes
    (
        "l40s-wrong.txt",
        {
            "program": "all_reduce_perf",
            "ranks": 4,
            "hosts": ["l40s-07"],
            "avg_busbw": 9.4575,
            "max_busbw": 20.3,
            "max_busbw_bytes": 1073741824,
            "wrong": 139264,
            "out_of_bounds": 0,
            "transport": "unknown",
            "gdr": None,
            "expected_busbw": 300.0,
            "expected_basis": "--min-busbw",
            "verdict": "fail",
            "reasons": [
                f"best bus bandwidth 20.3 GB/s at 1073741824 bytes {BELOW_300}",
                "139264 results were wrong (#wrong): data is corrupted somewhere",
            ],
        },
    ),
    # the out-of-bounds check failed
    (
        "b200-out-of-bounds.txt",
        {
            "program": "all_reduce_perf",
            "ranks": 16,
            "hosts": ["b200-a01", "b200-a02"],
            "avg_busbw": 331.7295,
            "max_busbw": 736.71,
            "max_busbw_bytes": 8589934592,
            "wrong": 0,
            "out_of_bounds": 24,
            "transport": "unknown",
            "gdr": None,
            "expected_busbw": 300.0,
            "expected_basis": "--min-busbw",
            "verdict": "fail",
            "reasons": ["24 values were written out of bounds"],
        },
    ),
    # the oldest layout: `error` holds the largest deviation (1e-07 is rounding, not wrong)
    (
        "p100-old-error-column.txt",
        {
            "program": "all_reduce_perf",
            "ranks": 4,
            "hosts": ["dgx1-p100"],
            "avg_busbw": 11.0311,
            "max_busbw": 46.34,
            "max_busbw_bytes": 134217728,
            "wrong": 0,
            "out_of_bounds": 0,
            "transport": "unknown",
            "gdr": None,
            "expected_busbw": 300.0,
            "expected_basis": "--min-busbw",
            "verdict": "fail",
            "reasons": [f"best bus bandwidth 46.34 GB/s at 134217728 bytes {BELOW_300}"],
        },
    ),
]


def verdict(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    status = main(["acceptance", "verdict", "--json", *args])
    return status, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_field_of_the_verdict(
    name: str, expected: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    status, answer = verdict(capsys, "--log", str(FIXTURES / name), "--min-busbw", "300")
    assert answer == expected
    assert status == (0 if expected["verdict"] == "pass" else 1)


def write_topology(path: Path, active: int, down: int) -> str:
    up = Port(port=1, state="ACTIVE", link_layer="InfiniBand", rate_gbps=400.0, healthy=True)
    off = Port(port=1, state="DOWN", link_layer="InfiniBand", rate_gbps=400.0, healthy=False)
    nics = [Nic(name=f"mlx5_{i}", ports=(up if i < active else off,)) for i in range(active + down)]
    path.write_text(Topology(nics=tuple(nics)).model_dump_json(by_alias=True))
    return str(path)


def test_the_expected_figure_comes_from_the_topology_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(FIXTURES / "h100-ib-2node.txt")
    seven = write_topology(tmp_path / "seven.json", active=7, down=1)
    status, answer = verdict(capsys, "--log", log, "--topology", seven)
    assert (status, answer["expected_busbw"], answer["reasons"]) == (0, 315.0, [])
    eight = write_topology(tmp_path / "eight.json", active=8, down=0)
    status, answer = verdict(capsys, "--log", log, "--topology", eight, "--fraction", "1")
    assert (status, answer["expected_busbw"], answer["verdict"]) == (1, 400.0, "fail")
    assert answer["reasons"] == [
        "best bus bandwidth 374.57 GB/s at 8589934592 bytes is below the expected 400 GB/s "
        "(1 x 8 ports' 400 GB/s)"
    ]


def test_a_soak_fails_when_the_bus_bandwidth_sinks(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(FIXTURES / "soak-drop.txt")
    status, answer = verdict(capsys, "--log", log, "--min-busbw", "300")
    assert (status, answer["ranks"], answer["max_busbw"]) == (0, 16, 372.4)
    status, answer = verdict(capsys, "--log", log, "--min-busbw", "300", "--soak")
    assert status == 1
    assert answer["reasons"] == [
        "bus bandwidth dropped from 372.4 to 301.2 GB/s over the soak (3 repetitions)"
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\n", "no nccl-tests result table found (a header line with size and count)"),
        (
            "#  size  count  type  redop  root  time  algbw  busbw  #wrong\n"
            "   8  2  float  sum  -1  20.0  0.00  0.00  0\n"
            "   1024  256  float  sum  -1  20.1  0.05  0.09\n",
            "line 3: 8 fields where the table header has 9: '1024  256  float  sum  -1  20.1  0.05"
            "  0.09'",
        ),
    ],
)
def test_unreadable_input_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    log = tmp_path / "run.log"
    log.write_text(text)
    assert main(["acceptance", "verdict", "--log", str(log)]) == 2
    assert capsys.readouterr().err == f"kube-rdma acceptance verdict: {log}: {message}\n"


def test_one_node_sets_no_nic_bound_and_nodes_overrides_the_hosts_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    eight = write_topology(tmp_path / "eight.json", active=8, down=0)
    single = str(FIXTURES / "h200-single-node.txt")
    status, answer = verdict(capsys, "--log", single, "--topology", eight)
    assert (answer["hosts"], answer["expected_busbw"]) == (["h200-node-03"], None)
    two = str(FIXTURES / "h100-ib-2node.txt")
    status, answer = verdict(capsys, "--log", two, "--topology", eight, "--nodes", "1")
    assert (status, answer["expected_busbw"]) == (0, None)
    status, answer = verdict(capsys, "--log", two, "--topology", eight, "--nodes", "2")
    assert answer["expected_busbw"] == 360.0


def test_a_missing_or_broken_topology_is_named_not_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(FIXTURES / "h100-ib-2node.txt")
    nope = tmp_path / "nope.json"
    assert main(["acceptance", "verdict", "--log", log, "--topology", str(nope)]) == 2
    assert capsys.readouterr().err == (
        f"kube-rdma acceptance verdict: --topology {nope}: No such file or directory; check the "
        "path\n"
    )
    bad = tmp_path / "bad.json"
    bad.write_text('{"nics": 3}')
    assert main(["acceptance", "verdict", "--log", log, "--topology", str(bad)]) == 2
    assert capsys.readouterr().err == (
        f"kube-rdma acceptance verdict: --topology {bad}: not a kube-rdma.io/topology document "
        "(1 problem; first: nics: Input should be a valid array); copy the node's annotation, "
        "kubectl get node NODE -o jsonpath='{.metadata.annotations.kube-rdma\\.io/topology}'\n"
    )


def test_the_headline_says_which_threshold_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(FIXTURES / "h100-ib-2node.txt")
    assert main(["acceptance", "verdict", "--log", log]) == 0
    assert capsys.readouterr().out == (
        "pass: best bus bandwidth 374.57 GB/s; no bandwidth bound: no threshold given "
        "(--min-busbw GB/s, or --topology FILE for 0.9 x what the node's ports carry); the "
        "verdict rests on wrong results, out-of-bounds values, the transport and NCCL's errors\n"
    )
    assert main(["acceptance", "verdict", "--log", log, "--min-busbw", "300"]) == 0
    assert capsys.readouterr().out == (
        "pass: best bus bandwidth 374.57 GB/s, expected at least 300 GB/s (--min-busbw)\n"
    )
    assert main(["acceptance", "verdict", "--log", log, "--min-busbw", "400"]) == 1
    assert capsys.readouterr().out == (
        "fail: best bus bandwidth 374.57 GB/s, expected at least 400 GB/s (--min-busbw)\n"
        "  best bus bandwidth 374.57 GB/s at 8589934592 bytes is below the expected 400 GB/s "
        "(--min-busbw)\n"
    )
    seven = write_topology(tmp_path / "seven.json", active=7, down=1)
    assert main(["acceptance", "verdict", "--log", log, "--topology", seven]) == 0
    assert capsys.readouterr().out == (
        "pass: best bus bandwidth 374.57 GB/s, expected at least 315 GB/s (0.9 x 7 ports' 350 "
        "GB/s)\n"
    )
    single = str(FIXTURES / "h200-single-node.txt")
    main(["acceptance", "verdict", "--log", single, "--topology", seven])
    assert "no bandwidth bound: one node: its traffic never reaches the NICs;" in (
        capsys.readouterr().out
    )
