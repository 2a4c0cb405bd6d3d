"""The corpus of NCCL logs and nccl-tests outputs in tests/fixtures (nccl-logs/, nccl-tests/), each
file's first line naming where it comes from: captured on a real H200, or re-typed in the shape
of a published run or report. Every file's diagnosis and every nccl-tests output's verdict,
exactly: exit status, transport, GPUDirect RDMA, the errors with their lines and advice, the
notes, and what the log cannot tell."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabric import known_errors
from fabric.diagnose import NO_LINES
from kube_rdma_cli.dispatch import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FAILED = f"this log shows a failure; {known_errors.FIRST_ERROR}"
SOCKETS = (
    "TCP sockets for the traffic between nodes: no usable RDMA device in the pod (check "
    "/dev/infiniband, the RDMA resource, IPC_LOCK, NCCL_IB_HCA and NCCL_IB_DISABLE)"
)
TCP_SENT = f"NCCL sent {SOCKETS}"
TCP_CHOSEN = f"NCCL chose {SOCKETS}"
NO_RDMA = (
    "NCCL found no RDMA device and chose the Socket network: any traffic between nodes goes "
    "over TCP"
)
NO_GDR = (
    "RDMA without GPUDirect RDMA: transfers are staged through host memory (check "
    "nvidia_peermem or dma-buf, and the GPU-NIC PCIe path)"
)
VERSION = "the NCCL version (its `NCCL version` start-up line is not in the log)"
TRANSPORT = (
    "the transport (no `Using network` line and no channel lines; NCCL_DEBUG_SUBSYS=INIT,NET "
    "prints them)"
)
LINK = "InfiniBand or RoCE (the `NET/IB : Using [0]mlx5_0:1/...` line is not in the log)"
GDR = "whether GPUDirect RDMA was used (no `via NET/...` channel lines)"
NODES = "how many nodes the job spans (no `nRanks N nNodes M` line)"


@dataclass(frozen=True)
class Diagnosis:
    status: int
    transport: str
    gdr: bool | None
    errors: tuple[tuple[str, int], ...]
    """Each error's name and line."""
    notes: tuple[str, ...]
    unknown: tuple[str, ...]


DIAGNOSES: list[tuple[str, Diagnosis | None]] = [
    ("nccl-logs/aws-ofi-efa.log", Diagnosis(0, "OFI", True, (), (), ())),
    (
        "nccl-logs/flush-after-error.log",
        Diagnosis(
            1,
            "RoCE",
            None,
            (("completion error 5", 2), ("timeout", 5)),
            (FAILED,),
            (VERSION, GDR, NODES),
        ),
    ),
    ("nccl-logs/h100-pxn-shared.log", Diagnosis(0, "IB", True, (), (), ())),
    (
        "nccl-logs/h200-bad-socket-ifname.log",
        Diagnosis(1, "unknown", None, (("no socket interface", 5),), (FAILED,), (TRANSPORT, NODES)),
    ),
    (
        "nccl-logs/h200-duplicate-gpu.log",
        Diagnosis(1, "Socket", None, (("duplicate GPU", 19),), (TCP_CHOSEN, FAILED), (NODES,)),
    ),
    ("nccl-logs/h200-ib-disabled.log", Diagnosis(0, "P2P/SHM", None, (), (NO_RDMA,), ())),
    (
        "nccl-logs/h200-ib-hca-missing.log",
        Diagnosis(1, "unknown", None, (("no NET plugin", 13),), (FAILED,), (TRANSPORT, NODES)),
    ),
    (
        "nccl-logs/h200-net-ib-forced.log",
        Diagnosis(1, "unknown", None, (("no NET plugin", 12),), (FAILED,), (TRANSPORT, NODES)),
    ),
    ("nccl-logs/h200-net-socket-allgather.log", Diagnosis(0, "P2P/SHM", None, (), (NO_RDMA,), ())),
    ("nccl-logs/h200-no-rdma-nic.log", Diagnosis(0, "P2P/SHM", None, (), (NO_RDMA,), ())),
    ("nccl-logs/h200-timestamps-all.log", Diagnosis(0, "P2P/SHM", None, (), (NO_RDMA,), ())),
    (
        "nccl-logs/h200-torchrun-tee-p2p-shm-off.log",
        Diagnosis(0, "P2P/SHM", None, (), (NO_RDMA,), ()),
    ),
    ("nccl-logs/h200-torchrun-tee.log", Diagnosis(0, "P2P/SHM", None, (), (NO_RDMA,), ())),
    (
        "nccl-logs/h200-warn-only-net-ib.log",
        Diagnosis(1, "unknown", None, (("no NET plugin", 4),), (FAILED,), (TRANSPORT, NODES)),
    ),
    (
        "nccl-logs/ib-2-12-completion-error.log",
        Diagnosis(
            1,
            "IB/RoCE",
            None,
            (("completion error 12", 2),),
            (FAILED,),
            (VERSION, LINK, GDR, NODES),
        ),
    ),
    ("nccl-logs/ib-2-27-gdrdma-pci.log", Diagnosis(0, "IB", True, (), (), ())),
    ("nccl-logs/kubectl-prefix-timestamps.log", Diagnosis(0, "RoCE", True, (), (), ())),
    ("nccl-logs/kubectl-timestamps-socket.log", Diagnosis(1, "Socket", None, (), (TCP_SENT,), ())),
    ("nccl-logs/ngc-ibext-sharp.log", Diagnosis(0, "IB", True, (), (), ())),
    (
        "nccl-logs/pdsh-deepspeed-completion.log",
        Diagnosis(1, "RoCE", True, (("completion error 12", 11),), (FAILED,), ()),
    ),
    (
        "nccl-logs/return-codes-only.log",
        Diagnosis(
            1,
            "unknown",
            None,
            (("NCCL returned 6", 2), ("NCCL returned 3", 5)),
            (FAILED,),
            (VERSION, TRANSPORT, NODES),
        ),
    ),
    (
        "nccl-logs/roce-2-18-modify-qp-einval.log",
        Diagnosis(1, "RoCE", None, (("ibv_modify_qp failed", 8),), (FAILED,), (GDR,)),
    ),
    (
        "nccl-logs/roce-2-23-retry-exc-err.log",
        Diagnosis(
            1,
            "RoCE",
            None,
            (("completion error 12", 2), ("timeout", 6)),
            (FAILED,),
            (VERSION, GDR, NODES),
        ),
    ),
    (
        "nccl-logs/roce-completion-error-12.log",
        Diagnosis(
            1,
            "RoCE",
            True,
            (("completion error 12", 12), ("completion error 5", 17), ("timeout", 18)),
            (FAILED,),
            (),
        ),
    ),
    (
        "nccl-logs/roce-network-line-only.log",
        Diagnosis(0, "RoCE", None, (), (), (VERSION, GDR, NODES)),
    ),
    (
        "nccl-logs/socket-network-line-only.log",
        Diagnosis(1, "Socket", None, (), (TCP_CHOSEN,), (VERSION, NODES)),
    ),
    (
        "nccl-logs/unknown-warn.log",
        Diagnosis(1, "IB", None, (("NCCL WARN", 7),), (FAILED,), (GDR,)),
    ),
    ("nccl-tests/a100-roce-2node.txt", Diagnosis(0, "RoCE", False, (), (NO_GDR,), ())),
    (
        "nccl-tests/allreduce-kubectl-prefix-socket.txt",
        Diagnosis(1, "Socket", None, (), (TCP_SENT,), ()),
    ),
    ("nccl-tests/allreduce-kubectl-prefix.txt", Diagnosis(0, "P2P/SHM", None, (), (), ())),
    ("nccl-tests/allreduce-kubectl-timestamps.txt", Diagnosis(0, "P2P/SHM", None, (), (), ())),
    ("nccl-tests/allreduce-ompi5-host-pid-tags.txt", Diagnosis(0, "RoCE", True, (), (), ())),
    ("nccl-tests/allreduce-pdsh-host-prefix.txt", Diagnosis(0, "IB", True, (), (), ())),
    ("nccl-tests/allreduce-timestamp-before-tag.txt", Diagnosis(0, "RoCE", True, (), (), ())),
    ("nccl-tests/alltoall-prterun-tags.txt", Diagnosis(0, "IB", True, (), (), ())),
    ("nccl-tests/b200-out-of-bounds.txt", None),
    ("nccl-tests/h100-ib-2node.txt", Diagnosis(0, "IB", True, (), (), ())),
    ("nccl-tests/h200-single-node.txt", Diagnosis(0, "P2P/SHM", None, (), (), ())),
    ("nccl-tests/l40s-wrong.txt", None),
    ("nccl-tests/p100-old-error-column.txt", None),
    ("nccl-tests/sendrecv-inplace-na.txt", Diagnosis(0, "IB", True, (), (), ())),
    ("nccl-tests/soak-drop.txt", None),
    ("nccl-tests/v100-socket-old.txt", Diagnosis(1, "Socket", None, (), (TCP_SENT,), ())),
]
"""None: the file holds no NCCL line (nccl-tests output run without NCCL_DEBUG)."""


def advice(name: str) -> tuple[str, str]:
    """The meaning and check the diagnosis gives for an error of that name."""
    if name.startswith("NCCL returned "):
        known = known_errors.returned(int(name.rsplit(" ", 1)[1]))
    elif name == known_errors.UNKNOWN_WARN.name:
        known = known_errors.UNKNOWN_WARN
    else:
        known = next(k for k in known_errors.KNOWN if k.name == name)
    return known.meaning, known.check


@pytest.mark.parametrize(("name", "expected"), DIAGNOSES, ids=[n for n, _ in DIAGNOSES])
def test_diagnosis(
    name: str, expected: Diagnosis | None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = FIXTURES / name
    status = main(["diagnose", "--nccl-log", str(path), "--json"])
    captured = capsys.readouterr()
    if expected is None:
        assert (status, captured.err) == (2, f"kube-rdma diagnose: {path}: {NO_LINES}\n")
        return
    answer = json.loads(captured.out)
    errors = answer["errors"]
    assert [(e["meaning"], e["check"]) for e in errors] == [advice(e["error"]) for e in errors]
    assert (
        Diagnosis(
            status,
            answer["transport"],
            answer["gdr"],
            tuple((e["error"], e["line"]) for e in errors),
            tuple(answer["notes"]),
            tuple(answer["unknown"]),
        )
        == expected
    )
    lines = path.read_text().splitlines()
    assert [e["text"] for e in errors] == [lines[e["line"] - 1].strip() for e in errors]


@dataclass(frozen=True)
class Verdict:
    status: int
    ranks: int
    max_busbw: float
    wrong: int | None
    transport: str
    gdr: bool | None
    reasons: list[str]


BELOW = "is below the expected 40 GB/s (--min-busbw)"
VERDICTS = [
    (
        "a100-roce-2node.txt",
        Verdict(
            1,
            8,
            38.89,
            0,
            "RoCE",
            False,
            ["best bus bandwidth 38.89 GB/s at 8589934592 bytes " + BELOW],
        ),
    ),
    (
        "allreduce-kubectl-prefix-socket.txt",
        Verdict(
            1,
            2,
            2.3,
            0,
            "Socket",
            None,
            [
                "best bus bandwidth 2.3 GB/s at 8589934592 bytes " + BELOW,
                "NCCL used TCP sockets, not RDMA (NET/Socket): run kube-rdma diagnose",
            ],
        ),
    ),
    ("allreduce-kubectl-prefix.txt", Verdict(0, 8, 471.9, 0, "P2P/SHM", None, [])),
    ("allreduce-kubectl-timestamps.txt", Verdict(0, 8, 471.9, 0, "P2P/SHM", None, [])),
    ("allreduce-ompi5-host-pid-tags.txt", Verdict(0, 8, 46.8, 0, "RoCE", True, [])),
    ("allreduce-pdsh-host-prefix.txt", Verdict(0, 8, 88.4, 0, "IB", True, [])),
    ("allreduce-timestamp-before-tag.txt", Verdict(0, 8, 46.5, 0, "RoCE", True, [])),
    ("alltoall-prterun-tags.txt", Verdict(0, 16, 45.3, 0, "IB", True, [])),
    (
        "b200-out-of-bounds.txt",
        Verdict(1, 16, 736.71, 0, "unknown", None, ["24 values were written out of bounds"]),
    ),
    ("h100-ib-2node.txt", Verdict(0, 16, 374.57, 0, "IB", True, [])),
    ("h200-single-node.txt", Verdict(0, 8, 482.64, 0, "P2P/SHM", None, [])),
    (
        "l40s-wrong.txt",
        Verdict(
            1,
            4,
            20.3,
            139264,
            "unknown",
            None,
            [
                "best bus bandwidth 20.3 GB/s at 1073741824 bytes " + BELOW,
                "139264 results were wrong (#wrong): data is corrupted somewhere",
            ],
        ),
    ),
    ("p100-old-error-column.txt", Verdict(0, 4, 46.34, 0, "unknown", None, [])),
    ("sendrecv-inplace-na.txt", Verdict(0, 16, 49.2, 0, "IB", True, [])),
    ("soak-drop.txt", Verdict(0, 16, 372.4, 0, "unknown", None, [])),
    (
        "v100-socket-old.txt",
        Verdict(
            1,
            2,
            1.05,
            None,
            "Socket",
            None,
            [
                "best bus bandwidth 1.05 GB/s at 2147483648 bytes " + BELOW,
                "NCCL used TCP sockets, not RDMA (NET/Socket): run kube-rdma diagnose",
            ],
        ),
    ),
]


@pytest.mark.parametrize(("name", "expected"), VERDICTS, ids=[n for n, _ in VERDICTS])
def test_verdict_at_40_gbps(
    name: str, expected: Verdict, capsys: pytest.CaptureFixture[str]
) -> None:
    log = FIXTURES / "nccl-tests" / name
    status = main(["acceptance", "verdict", "--log", str(log), "--json", "--min-busbw", "40"])
    answer = json.loads(capsys.readouterr().out)
    assert answer["verdict"] == ("pass" if expected.status == 0 else "fail")
    assert (
        Verdict(
            status,
            answer["ranks"],
            answer["max_busbw"],
            answer["wrong"],
            answer["transport"],
            answer["gdr"],
            answer["reasons"],
        )
        == expected
    )


def test_the_corpus_is_every_fixture() -> None:
    files = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("nccl-*/*"))
    assert [n for n, _ in DIAGNOSES] == files
    assert [f"nccl-tests/{n}" for n, _ in VERDICTS] == [f for f in files if "nccl-tests/" in f]
    assert len(files) >= 30
