"""`kube-rdma diagnose`'s answer on an NCCL log: did NCCL use RDMA, and if not, why.

Pure: a `LogReport` in, the JSON answer, its readable form and the exit status out. Exit 0 when
every connection that left a host used RDMA (a log with connections inside one node only is
fine too), 1 when something fell back to sockets, an error was logged, or the lines do not show
the transport. A log cut down to the lines around a failure is read for what it holds, and the
answer says what it cannot tell.
"""

from __future__ import annotations

from fabric.known_errors import FIRST_ERROR
from fabric.nccl_log import RDMA_TRANSPORTS, LogReport
from kube_rdma.core import keys
from kube_rdma.core.objects import Json

NO_LINES = (
    "no NCCL lines found; run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (the "
    f'{keys.DEBUG}: "true" pod annotation sets both)'
)


def log_answer(report: LogReport) -> Json:
    return {
        "nccl_version": report.nccl_version,
        "transport": report.transport,
        "network": report.network,
        "nodes": report.nodes,
        "devices": [report.ib_devices[i] for i in sorted(report.ib_devices)],
        "connections": report.connections,
        "gdr": report.gdr,
        "gdr_from": report.gdr_from,
        "gid_index": report.gid_index,
        "rdma": report.rdma,
        "errors": [
            {
                "error": e.error,
                "line": e.line,
                "text": e.text,
                "meaning": e.meaning,
                "check": e.check,
            }
            for e in report.errors
        ],
        "notes": notes(report),
        "unknown": unknowns(report),
    }


def notes(report: LogReport) -> list[str]:
    found = []
    causes = [e for e in report.errors if not e.failure]
    if report.transport == "Socket":
        did = "sent" if "NET/Socket" in report.connections else "chose"
        why = (
            f"{causes[0].error} (line {causes[0].line}; its check says how to fix it)"
            if causes
            else "no usable RDMA device in the pod (check /dev/infiniband, the RDMA resource, "
            "IPC_LOCK, NCCL_IB_HCA and NCCL_IB_DISABLE)"
        )
        found.append(f"NCCL {did} TCP sockets for the traffic between nodes: {why}")
    elif report.network == "Socket":
        found.append(
            "NCCL found no RDMA device and chose the Socket network: any traffic between nodes "
            "goes over TCP"
        )
    if report.gdr is False:
        found.append(
            "RDMA without GPUDirect RDMA: transfers are staged through host memory (check "
            "nvidia_peermem or dma-buf, and the GPU-NIC PCIe path)"
        )
    if report.failures:
        found.append(f"this log shows a failure; {FIRST_ERROR}")
    return found


def unknowns(report: LogReport) -> list[str]:
    """What the log does not show, each with the lines that would have shown it."""
    missing = []
    if report.nccl_version is None:
        missing.append("the NCCL version (its `NCCL version` start-up line is not in the log)")
    if report.transport == "unknown":
        missing.append(
            "the transport (no `Using network` line and no channel lines; "
            "NCCL_DEBUG_SUBSYS=INIT,NET prints them)"
        )
    elif report.transport == "IB/RoCE":
        missing.append(
            "InfiniBand or RoCE (the `NET/IB : Using [0]mlx5_0:1/...` line is not in the log)"
        )
    if report.gdr is None and report.transport in RDMA_TRANSPORTS:
        missing.append("whether GPUDirect RDMA was used (no `via NET/...` channel lines)")
    elif report.gdr and report.gdr_from == "NICs":
        missing.append(
            "whether every GPU used GPUDirect RDMA: NCCL enabled it on the NICs but skips it for "
            "a GPU too far from its NIC (no `via NET/...` channel lines)"
        )
    if report.nodes is None and not report.connections:
        missing.append("how many nodes the job spans (no `nRanks N nNodes M` line)")
    return missing


def exit_status(report: LogReport) -> int:
    return 0 if report.rdma else 1


def text(answer: Json) -> str:
    lines = [
        f"NCCL {answer['nccl_version'] or 'version unknown'}: transport {answer['transport']}"
        + (f" over {', '.join(answer['devices'])}" if answer["devices"] else "")
        + (f", GID index {answer['gid_index']}" if answer["gid_index"] is not None else ""),
        "connections: "
        + (", ".join(f"{k} {v}" for k, v in answer["connections"].items()) or "none logged"),
        f"GPUDirect RDMA: {_gdr(answer)}",
    ]
    for error in answer["errors"]:
        lines += [
            f"error: {error['error']} (line {error['line']})",
            f"  {error['text']}",
            f"  means: {error['meaning']}",
            f"  check: {error['check']}",
        ]
    lines += [f"note: {note}" for note in answer["notes"]]
    lines += [f"the log cannot tell: {unknown}" for unknown in answer["unknown"]]
    return "\n".join(lines) + "\n"


GDR_SAID = {
    (True, "connections"): "yes (every RDMA connection went `via NET/.../GDRDMA`)",
    (False, "connections"): "no (RDMA connections without `/GDRDMA`)",
    (True, "GPU-NIC pairs"): "enabled for every GPU-NIC pair logged (`GPU Direct RDMA Enabled "
    "for GPU N / HCA M`)",
    (False, "GPU-NIC pairs"): "disabled for a GPU-NIC pair (`GPU Direct RDMA Disabled for GPU N "
    "/ HCA M`)",
    (True, "NICs"): "enabled on the NICs (`GPU Direct RDMA Enabled for HCA N`)",
    (False, "NICs"): "disabled on a NIC (`GPU Direct RDMA Disabled for HCA N`)",
}


def _gdr(answer: Json) -> str:
    said = GDR_SAID.get((answer["gdr"], answer["gdr_from"]))
    if said is not None:
        return said
    if answer["transport"] in ("Socket", "P2P/SHM"):
        return "does not apply (no RDMA traffic)"
    return "unknown"
