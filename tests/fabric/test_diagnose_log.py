"""`kube-rdma diagnose --nccl-log`: four logs captured from NCCL 2.28.9 on a real H200 without an
RDMA NIC (tests/fixtures/nccl-logs/h200-*), and logs written in the shapes of published
multi-node runs (IB with GPUDirect RDMA, RoCE with a GID index, a socket fallback, a completion
error)."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from fabric import known_errors
from fabric.nccl_log import analyze
from kube_rdma_cli.dispatch import main

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
FAILED = f"this log shows a failure; {known_errors.FIRST_ERROR}"
CANNOT_TELL_TRANSPORT = (
    "the transport (no `Using network` line and no channel lines; NCCL_DEBUG_SUBSYS=INIT,NET "
    "prints them)"
)
CANNOT_TELL_NODES = "how many nodes the job spans (no `nRanks N nNodes M` line)"
NO_RDMA_NOTE = (
    "NCCL found no RDMA device and chose the Socket network: any traffic between nodes goes "
    "over TCP"
)
SOCKETS = (
    "TCP sockets for the traffic between nodes: no usable RDMA device in the pod (check "
    "/dev/infiniband, the RDMA resource, IPC_LOCK, NCCL_IB_HCA and NCCL_IB_DISABLE)"
)
TCP_SENT = f"NCCL sent {SOCKETS}"
TCP_CHOSEN = f"NCCL chose {SOCKETS}"
H200: dict[str, object] = {
    "nccl_version": "2.28.9+cuda13.0",
    "devices": [],
    "connections": {},
    "gdr": None,
    "gdr_from": None,
}


def diagnose(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, dict[str, object]]:
    status = main(["diagnose", "--nccl-log", str(path), "--json"])
    answer = json.loads(capsys.readouterr().out)
    for error in answer["errors"]:
        assert (error.pop("meaning"), error.pop("check")) == _advice(error["error"])
    return status, answer


def _advice(name: str) -> tuple[str, str]:
    known = next(k for k in known_errors.KNOWN if k.name == name)
    return known.meaning, known.check


CASES = [
    (
        "nccl-logs/h200-no-rdma-nic.log",
        0,
        {
            **H200,
            "transport": "P2P/SHM",
            "network": "Socket",
            "nodes": 1,
            "gid_index": None,
            "rdma": True,
            "errors": [],
            "notes": [NO_RDMA_NOTE],
            "unknown": [],
        },
    ),
    (
        "nccl-logs/h200-ib-disabled.log",
        0,
        {
            **H200,
            "transport": "P2P/SHM",
            "network": "Socket",
            "nodes": 1,
            "gid_index": None,
            "rdma": True,
            "errors": [],
            "notes": [NO_RDMA_NOTE],
            "unknown": [],
        },
    ),
    (
        "nccl-logs/h200-net-ib-forced.log",
        1,
        {
            **H200,
            "transport": "unknown",
            "network": None,
            "nodes": None,
            "gid_index": None,
            "rdma": False,
            "errors": [
                {
                    "error": "no NET plugin",
                    "line": 12,
                    "text": "[2026-12-01 01:13:51] vm:558:558 [0] plugin/net.cc:379 NCCL WARN "
                    "Failed to initialize any NET plugin",
                }
            ],
            "notes": [FAILED],
            "unknown": [CANNOT_TELL_TRANSPORT, CANNOT_TELL_NODES],
        },
    ),
    (
        "nccl-logs/h200-duplicate-gpu.log",
        1,
        {
            **H200,
            "transport": "Socket",
            "network": "Socket",
            "nodes": None,
            "gid_index": None,
            "rdma": False,
            "errors": [
                {
                    "error": "duplicate GPU",
                    "line": 19,
                    "text": "[2026-12-01 01:13:56] vm:590:590 [0] init.cc:904 NCCL WARN Duplicate "
                    "GPU detected : rank 0 and rank 1 both on CUDA device 60",
                }
            ],
            "notes": [TCP_CHOSEN, FAILED],
            "unknown": [CANNOT_TELL_NODES],
        },
    ),
    (
        "nccl-tests/h100-ib-2node.txt",
        0,
        {
            "nccl_version": "2.21.5+cuda12.4",
            "transport": "IB",
            "network": "IB",
            "nodes": 2,
            "devices": [f"mlx5_{i}:1/IB" for i in (0, 3, 4, 5, 6, 9, 10, 11)],
            "connections": {"NET/IB": 4, "P2P": 2},
            "gdr": True,
            "gdr_from": "connections",
            "gid_index": None,
            "rdma": True,
            "errors": [],
            "notes": [],
            "unknown": [],
        },
    ),
    (
        "nccl-tests/a100-roce-2node.txt",
        0,
        {
            "nccl_version": "2.18.5+cuda12.2",
            "transport": "RoCE",
            "network": "IB",
            "nodes": 2,
            "devices": [f"mlx5_{i}:1/RoCE" for i in range(4)],
            "connections": {"NET/IB": 3, "P2P": 1},
            "gdr": False,
            "gdr_from": "connections",
            "gid_index": 3,
            "rdma": True,
            "errors": [],
            "notes": [
                "RDMA without GPUDirect RDMA: transfers are staged through host memory (check "
                "nvidia_peermem or dma-buf, and the GPU-NIC PCIe path)"
            ],
            "unknown": [],
        },
    ),
    (
        "nccl-tests/v100-socket-old.txt",
        1,
        {
            "nccl_version": "2.9.6+cuda11.2",
            "transport": "Socket",
            "network": "Socket",
            "nodes": None,
            "devices": [],
            "connections": {"NET/Socket": 2},
            "gdr": None,
            "gdr_from": None,
            "gid_index": None,
            "rdma": False,
            "errors": [],
            "notes": [TCP_SENT],
            "unknown": [],
        },
    ),
    (
        "nccl-logs/roce-completion-error-12.log",
        1,
        {
            "nccl_version": "2.23.4+cuda12.6",
            "transport": "RoCE",
            "network": "IB",
            "nodes": 2,
            "devices": ["mlx5_2:1/RoCE", "mlx5_3:1/RoCE"],
            "connections": {"NET/IB": 2, "P2P": 1},
            "gdr": True,
            "gdr_from": "connections",
            "gid_index": 3,
            "rdma": False,
            "errors": [
                {
                    "error": "completion error 12",
                    "line": 12,
                    "text": "trainer-0:88:140 [0] transport/net_ib.cc:1697 NCCL WARN NET/IB : Got "
                    "completion from peer 10.152.0.13<41236> with status=12 opcode=0 len=0 vendor "
                    "err 129 (Recv) localGid ::ffff:10.152.0.12 remoteGids::ffff:10.152.0.13",
                },
                {
                    "error": "completion error 5",
                    "line": 17,
                    "text": "trainer-0:88:140 [0] transport/net_ib.cc:1697 NCCL WARN NET/IB : Got "
                    "completion from peer 10.152.0.13<41236> with status=5 opcode=32656 "
                    "len=32659 vendor err 249 (Recv) localGid ::ffff:10.152.0.12 "
                    "remoteGids::ffff:10.152.0.13",
                },
                {
                    "error": "timeout",
                    "line": 18,
                    "text": "[rank0]:[E1130 09:14:02.117000 88 ProcessGroupNCCL.cpp:616] [Rank 0] "
                    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
                    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600017 "
                    "milliseconds before timing out.",
                },
            ],
            "notes": [FAILED],
            "unknown": [],
        },
    ),
]


@pytest.mark.parametrize(("name", "status", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_field_of_the_diagnosis(
    name: str, status: int, expected: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    assert diagnose(capsys, ROOT / name) == (status, expected)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (
            "h:1:2 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion with error 12, "
            "opcode 0, len 0, vendor err 129",
            "completion error 12",
        ),
        (
            "h:1:2 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
            "fe80::966d%ib0<33397> with error 4, opcode 32611, len 32611, vendor err 81 (Send)",
            "completion error 4",
        ),
        (
            "h:1:2 [0] misc/ibvwrap.cc:262 NCCL WARN Call to ibv_modify_qp failed with error "
            "Connection timed out",
            "ibv_modify_qp failed",
        ),
        (
            "h:1:2 [0] misc/ibvwrap.cc:234 NCCL WARN Call to ibv_create_qp failed with 12 Cannot "
            "allocate memory",
            "ibv_create_qp failed",
        ),
        (
            "h:1:2 [0] NCCL WARN Call to ibv_reg_mr_iova2 failed with error Bad address",
            "ibv_reg_mr failed",
        ),
        (
            "h:1:2 [0] NCCL WARN NET/Socket : connect to 10.0.0.2<41234> failed : Connection "
            "timed out",
            "timeout",
        ),
    ],
)
def test_each_known_error_is_recognised(line: str, error: str) -> None:
    (finding,) = analyze(line).errors
    assert (finding.error, finding.line, finding.text) == (error, 1, line)


def test_benign_lines_are_not_errors() -> None:
    text = "h:1:1 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.\n"
    assert analyze(text).errors == ()


def test_a_pasted_message_without_its_prefix_is_diagnosed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "paste.txt"
    log.write_text(
        "NET/IB : Got completion from peer 10.0.0.2<41236> with status=12 opcode=0 len=0 vendor "
        "err 129 (Recv)\n"
    )
    assert main(["diagnose", "--nccl-log", str(log), "--json"]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert (answer["transport"], [e["error"] for e in answer["errors"]]) == (
        "IB/RoCE",
        ["completion error 12"],
    )


def test_a_file_without_nccl_lines_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "app.log"
    log.write_text("epoch 1 loss 0.3\n")
    assert main(["diagnose", "--nccl-log", str(log)]) == 2
    assert "no NCCL lines found" in capsys.readouterr().err
    assert main(["diagnose", "--nccl-log", str(tmp_path / "missing.log")]) == 2


@pytest.mark.parametrize(
    ("line", "error"),
    [
        # NCCL 2.1x
        (
            "h:1:2 [3] transport/net_ib.cc:1167 NCCL WARN NET/IB : Got completion with error 12, "
            "opcode 0, len 0, vendor err 129",
            "completion error 12",
        ),
        # NCCL 2.1x-2.2x
        (
            "h:1:2 [0] transport/net_ib.cc:1697 NCCL WARN NET/IB : Got completion from peer "
            "10.0.0.2<41236> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
            "completion error 12",
        ),
        # NCCL 2.2x
        (
            "h:1:2 [2] transport/net_ib.cc:2337 NCCL WARN NET/IB: Got completion from peer "
            "10.0.0.2<36213> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND "
            "reqSize=524288 vendor_err=129 req_type=Send localGid ::ffff:10.0.0.1 "
            "remoteGids::ffff:10.0.0.2 hca mlx5_2",
            "completion error 12",
        ),
        (
            "h:1:2 [2] NCCL WARN NET/IB: Got completion from peer 10.0.0.2<36213> with "
            "status=IBV_WC_WR_FLUSH_ERR(5) opcode=IBV_WC_RECV reqSize=0 vendor_err=249 hca mlx5_2",
            "completion error 5",
        ),
        (
            "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with status=13 "
            "opcode=0 len=0 vendor err 136 (Send)",
            "completion error 13",
        ),
        (
            "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with status=9 "
            "opcode=0 len=0 vendor err 138 (Send)",
            "completion error",
        ),
        (
            "h:1:2 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found",
            "no socket interface",
        ),
        (
            "h:1:2 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote "
            "peer gpu-2<52914>",
            "connection closed by peer",
        ),
        (
            "h:1:2 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error",
            "NIC async event",
        ),
        (
            "h:1:2 [0] enqueue.cc:100 NCCL WARN Cuda failure 'out of memory'",
            "CUDA failure",
        ),
        (
            "h:1:2 [0] NCCL WARN Message truncated : received 1024 bytes instead of 256",
            "message truncated",
        ),
        (
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote "
            "process exited or there was a network error, NCCL version 2.21.5",
            "remote error",
        ),
        (
            "h:1:2 [0] process_err_completion:1723 NCCL WARN NET/OFI Operation with NULL "
            "context completed with error",
            "OFI completion error",
        ),
        (
            "[2025-10-16 22:16:08] h:1:2 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI "
            "fi_getinfo() call failed: No data available",
            "OFI no provider",
        ),
        (
            "h:1:2 [0] graph/rings.cc:43 NCCL WARN Error : ring 1 does not loop back to start",
            "NCCL WARN",
        ),
    ],
)
def test_every_warning_is_explained(line: str, error: str) -> None:
    (finding,) = analyze(line).errors
    assert (finding.error, finding.line, finding.text) == (error, 1, line)


def test_one_return_code_trace_is_no_failure_a_chain_is() -> None:
    # NCCL_IB_DISABLE=1: the IB plugin declines with one trace, then Socket serves.
    declined = "vm:527:527 [0] NCCL INFO transport/net_ib.cc:852 -> 3\n"
    assert analyze(declined).errors == ()
    chain = declined + "vm:527:527 [0] NCCL INFO init.cc:1572 -> 3\n"
    assert [(e.error, e.line) for e in analyze(chain).errors] == [("NCCL returned 3", 1)]


@pytest.mark.parametrize(
    ("via", "connection", "gdr"),
    [
        ("NET/IB/2/GDRDMA", "NET/IB", True),
        ("NET/IB/1(2)/GDRDMA/Shared", "NET/IB", True),  # PXN through rank 2, shared buffers
        ("NET/IB/0/GDRDMA(PCI)", "NET/IB", True),
        ("NET/IBext_v8/0/GDRDMA", "NET/IB", True),
        ("NET/IBext/3/GDRDMA", "NET/IB", True),
        ("NET/AWS Libfabric/0/GDRDMA", "NET/OFI", True),
        ("NET/Libfabric/1/GDRDMA", "NET/OFI", True),
        ("NET/IB/5", "NET/IB", False),
        ("NET/IB/1(2)/Shared", "NET/IB", False),
        ("NET/Socket/0", "NET/Socket", None),
        ("P2P/CUMEM/read", "P2P", None),
    ],
)
def test_channel_notations(via: str, connection: str, gdr: bool | None) -> None:
    report = analyze(f"h:1:2 [0] NCCL INFO Channel 01/0 : 9[1] -> 0[0] [receive] via {via}\n")
    assert (report.connections, report.gdr) == ({connection: 1}, gdr)


@pytest.mark.parametrize(
    ("lines", "transport"),
    [
        (["NCCL INFO Using network Socket"], "Socket"),
        (["NCCL INFO Using network IB"], "IB/RoCE"),
        (
            ["NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB", "NCCL INFO Using network IB"],
            "RoCE",
        ),
        (
            [
                "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB/SHARP [RO]",
                "NCCL INFO Using network IBext_v8",
            ],
            "IB",
        ),
        (["NCCL INFO Using network IBext"], "IB/RoCE"),
        (["NCCL INFO Using network AWS Libfabric"], "OFI"),
        (["NCCL INFO Using network Libfabric"], "OFI"),
        (["NCCL INFO Using network FancyNet"], "unknown"),
        # one node: nothing leaves it, whatever was chosen for between nodes
        (
            ["NCCL INFO Using network Socket", "NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1"],
            "P2P/SHM",
        ),
        # between nodes, the channel lines cut out
        (["NCCL INFO Using network IB", "NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2"], "IB/RoCE"),
        (["NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2"], "unknown"),
    ],
)
def test_the_network_line_alone(lines: list[str], transport: str) -> None:
    assert analyze("\n".join(f"h:1:1 [0] {line}" for line in lines)).transport == transport


IB_START = [
    "n01:5120:5190 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "n01:5120:5190 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:x<0>",
    "n01:5120:5190 [0] NCCL INFO Using network IB",
]
GDR_UNKNOWN = "whether GPUDirect RDMA was used (no `via NET/...` channel lines)"
GDR_PER_GPU = (
    "whether every GPU used GPUDirect RDMA: NCCL enabled it on the NICs but skips it for a GPU "
    "too far from its NIC (no `via NET/...` channel lines)"
)


@pytest.mark.parametrize(
    ("lines", "gdr", "gdr_from", "said", "unknown"),
    [
        # net_ib.cc, per NIC
        (
            [
                "n01:5120:5190 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
                "n01:5120:5190 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'",
            ],
            True,
            "NICs",
            "enabled on the NICs (`GPU Direct RDMA Enabled for HCA N`)",
            [GDR_PER_GPU],
        ),
        (
            [
                "n01:5120:5190 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
                "n01:5120:5190 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1' "
                "(no module)",
            ],
            False,
            "NICs",
            "disabled on a NIC (`GPU Direct RDMA Disabled for HCA N`)",
            [],
        ),
        # graph/paths.cc, per GPU and NIC (newer, then older with the network's name)
        (
            [
                "n01:5120:5190 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 0 / HCA 0 "
                "(distance 3 <= 4), read 1 mode Default",
                "n01:5120:5190 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
            ],
            True,
            "GPU-NIC pairs",
            "enabled for every GPU-NIC pair logged (`GPU Direct RDMA Enabled for GPU N / HCA M`)",
            [],
        ),
        (
            [
                "n01:5120:5190 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 2 / HCA 1 "
                "(distance 5 >= 4)",
            ],
            False,
            "GPU-NIC pairs",
            "disabled for a GPU-NIC pair (`GPU Direct RDMA Disabled for GPU N / HCA M`)",
            [],
        ),
        # the channel lines, where present, win
        (
            [
                "n01:5120:5190 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
                "n01:5120:5190 [0] NCCL INFO Channel 00/0 : 4[0] -> 0[0] [receive] via NET/IB/0",
            ],
            False,
            "connections",
            "no (RDMA connections without `/GDRDMA`)",
            [],
        ),
        # the Socket transport's line says nothing about RDMA
        (
            ["n01:5120:5190 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'"],
            None,
            None,
            "unknown",
            [GDR_UNKNOWN],
        ),
    ],
)
def test_gpudirect_rdma_from_the_lines_that_say_it(
    lines: list[str],
    gdr: bool | None,
    gdr_from: str | None,
    said: str,
    unknown: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = tmp_path / "nccl.log"
    log.write_text("\n".join([*IB_START, *lines]) + "\n")
    main(["diagnose", "--nccl-log", str(log), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert (answer["gdr"], answer["gdr_from"]) == (gdr, gdr_from)
    assert [u for u in answer["unknown"] if "GPUDirect" in u] == unknown
    main(["diagnose", "--nccl-log", str(log)])
    out = capsys.readouterr().out
    assert f"GPUDirect RDMA: {said}\n" in out
    assert "not used" not in out


def test_gpudirect_rdma_does_not_apply_without_rdma(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "nccl.log"
    log.write_text(
        "vm:1:1 [0] NCCL INFO Using network Socket\n"
        "vm:1:1 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 0 / HCA 0 (distance 5 > 4)\n"
    )
    main(["diagnose", "--nccl-log", str(log)])
    assert "GPUDirect RDMA: does not apply (no RDMA traffic)\n" in capsys.readouterr().out


NO_VERBS = [
    "ws:58239:58239 [0] NCCL INFO NCCL version 2.23.4+cuda12.1",
    "ws:58239:58245 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal "
    "network plugin.",
    "ws:58239:58245 [0] NCCL INFO Failed to open libibverbs.so[.1]",
    "ws:58239:58245 [0] NCCL INFO NET/Socket : Using [0]eth0:192.0.2.7<0>",
    "ws:58239:58245 [0] NCCL INFO Using network Socket",
]


@pytest.mark.parametrize(
    "line",
    [
        "ws:58239:58245 [0] NCCL INFO Failed to open libibverbs.so[.1]",  # NCCL's ibvsymbols.cc
        "ws:58239:58245 [0] misc/ibvwrap.cc:62 NCCL WARN Failed to open libibverbs.so[.1]",  # older
    ],
)
def test_an_image_without_rdma_core_is_named_with_its_fix(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "nccl.log"
    log.write_text("\n".join([*NO_VERBS[:2], line, *NO_VERBS[3:]]) + "\n")
    assert main(["diagnose", "--nccl-log", str(log), "--json"]) == 1
    answer = json.loads(capsys.readouterr().out)
    (error,) = answer["errors"]
    assert (error["error"], error["line"]) == ("no libibverbs (rdma-core) in the image", 3)
    assert "no rdma-core" in error["meaning"]
    assert "libibverbs1" in error["check"]
    assert "NGC image" in error["check"]
    assert answer["notes"] == [
        "NCCL chose TCP sockets for the traffic between nodes: no libibverbs (rdma-core) in the "
        "image (line 3; its check says how to fix it)"
    ]
    assert "/dev/infiniband" not in json.dumps(answer)


def test_a_job_on_one_node_without_rdma_core_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "nccl.log"
    one_node = "ws:58239:58245 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2"
    log.write_text("\n".join([*NO_VERBS, one_node]) + "\n")
    assert main(["diagnose", "--nccl-log", str(log), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["transport"], answer["notes"]) == ("P2P/SHM", [NO_RDMA_NOTE])
    assert [e["error"] for e in answer["errors"]] == ["no libibverbs (rdma-core) in the image"]


GOOD = ROOT / "nccl-logs" / "roce-completion-error-12.log"


def test_the_argument_is_a_log_when_such_a_file_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "nccl.log").write_text(GOOD.read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["diagnose", "nccl.log", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["transport"] == "RoCE"
    # `nccl.log` is also a valid pod name: the answer says which it took
    assert captured.err == (
        "kube-rdma diagnose: nccl.log is a file here: reading it as an NCCL log, not as a pod\n"
    )
    assert main(["diagnose", str(GOOD), "--json"]) == 1
    assert capsys.readouterr().err == ""


def test_a_missing_log_is_named_not_taken_for_a_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("nccl.log", "out.TXT"):
        assert main(["diagnose", name]) == 2
        assert capsys.readouterr().err == (
            f"kube-rdma diagnose: {name}: no such file (an argument ending .log or .txt, or given "
            "to --nccl-log, is read as an NCCL log); check the path\n"
        )
    assert main(["diagnose", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"kube-rdma diagnose: {tmp_path}: Is a directory; give an NCCL log file\n"
    )


@pytest.mark.parametrize("argv", [["-"], ["--nccl-log", "-"]])
def test_a_dash_reads_standard_input(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(GOOD.read_bytes())))
    assert main(["diagnose", *argv, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["transport"] == "RoCE"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"epoch 1 loss 0.3\n")))
    assert main(["diagnose", *argv]) == 2
    assert capsys.readouterr().err.startswith("kube-rdma diagnose: standard input: no NCCL lines")


def test_a_pod_name_is_still_a_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = []

    async def pod(args: argparse.Namespace) -> int:
        asked.append(args.pod)
        return 0

    monkeypatch.setattr("fabric.cli._diagnose_pod", pod)
    monkeypatch.chdir(tmp_path)
    assert main(["diagnose", "team-a/worker-0"]) == 0
    assert main(["diagnose", "worker-0"]) == 0
    assert asked == ["team-a/worker-0", "worker-0"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            [],
            "give a POD (NAMESPACE/NAME), an NCCL log FILE, or - to read the log from standard "
            "input",
        ),
        (["worker-0", "--nccl-log", "x.log"], "give a POD or a log ('worker-0' and --nccl-log"),
    ],
)
def test_neither_or_both_is_a_usage_error(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", *argv]) == 2
    assert capsys.readouterr().err.startswith(f"kube-rdma diagnose: {said}")
