"""NCCL failures that recur on RDMA clusters: how NCCL words them, what they usually mean and what
to check first. The wording follows NCCL's own messages (transport/net_ib.cc, init.cc,
plugin/net.cc) and the answers its maintainers give for them; PyTorch's watchdog line is
PyTorch's (ProcessGroupNCCL.cpp)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownError:
    name: str
    pattern: re.Pattern[str]
    meaning: str
    check: str


KNOWN: tuple[KnownError, ...] = (
    KnownError(
        "completion error 12",
        re.compile(r"Got completion (?:from peer .*?)?with (?:error |status=)12\b"),
        "transport retry counter exceeded: the peer's NIC never acknowledged the packets; the "
        "connection was set up over TCP but RDMA traffic does not get through",
        "RoCE: the GID index (the pod's own RoCE v2 IPv4 entry), PFC/ECN on the switch ports, "
        "routing between the rails' subnets; InfiniBand: the port state and the subnet manager; "
        "run ib_write_bw between the two nodes",
    ),
    KnownError(
        "completion error 4",
        re.compile(r"Got completion (?:from peer .*?)?with (?:error |status=)4\b"),
        "local protection error: the NIC could not access the registered buffer",
        "GPUDirect RDMA: nvidia_peermem loaded, PCIe ACS disabled between GPU and NIC, IOMMU "
        "off or in passthrough",
    ),
    KnownError(
        "ibv_modify_qp failed",
        re.compile(r"ibv_modify_qp failed"),
        "a queue pair could not be moved to ready-to-receive/send: the peer's address (GID) "
        "is not reachable from this port",
        "the GID index against show_gids inside the pod, the same RoCE version on both sides, "
        "the port MTUs, and that both pods' rail networks are up",
    ),
    KnownError(
        "ibv_create_qp failed",
        re.compile(r"ibv_create_qp failed"),
        "the NIC refused a new queue pair, most often for lack of locked memory",
        "the container's IPC_LOCK capability and memlock limit (ulimit -l), and the NIC's "
        "resource limits",
    ),
    KnownError(
        "ibv_reg_mr failed",
        re.compile(r"ibv_reg_mr\w* failed"),
        "memory registration failed",
        "IPC_LOCK and the memlock limit; for GPU memory, nvidia_peermem or dma-buf support",
    ),
    KnownError(
        "no NET plugin",
        re.compile(r"Failed to initialize any NET plugin"),
        "NCCL_NET names a transport that found no device (NCCL_NET=IB without an RDMA device)",
        "that the pod sees /dev/infiniband and an RDMA resource, and NCCL_IB_HCA matches a "
        "device of the pod",
    ),
    KnownError(
        "duplicate GPU",
        re.compile(r"Duplicate GPU detected"),
        "two ranks use one GPU",
        "one rank per GPU: the process count per pod against its GPU request, "
        "CUDA_VISIBLE_DEVICES and the launcher's local rank",
    ),
    KnownError(
        "timeout",
        re.compile(
            r"Watchdog caught collective operation timeout|NCCL WARN.*(?:timed out|[Tt]imeout)"
            r"|Connection timed out"
        ),
        "an operation or a connection did not complete in time: a peer died, hangs, or "
        "cannot be reached",
        "the other ranks' logs for the first error, and the network between the nodes",
    ),
)


def match(line: str) -> KnownError | None:
    return next((k for k in KNOWN if k.pattern.search(line)), None)
