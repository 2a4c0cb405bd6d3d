"""NCCL failures that recur on RDMA clusters: how NCCL words them, what they usually mean and what
to check first. The wording follows NCCL's own messages (transport/net_ib.cc, misc/ibvwrap.cc,
bootstrap.cc, misc/socket.cc, init.cc, plugin/net.cc) and the answers its maintainers give for
them; the AWS OFI plugin's are aws-ofi-nccl's (nccl_ofi_rdma.c), PyTorch's are PyTorch's
(ProcessGroupNCCL.cpp, NCCLUtils.cpp).

A work completion's status is `enum ibv_wc_status` (rdma-core, libibverbs/verbs.h). NCCL has
printed a failed completion three ways:
- 2.1x: `Got completion with error 12, opcode 0, len 0, vendor err 129` (later with `from peer
  ADDR` before `with`);
- 2.1x-2.2x: `Got completion from peer ADDR with status=12 opcode=0 len=0 vendor err 129 (Recv)`;
- 2.2x: `... with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND reqSize=0 vendor_err=129
  req_type=Send localGid ... remoteGids ... hca mlx5_0`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FIRST_ERROR = (
    "find the first error across all ranks (the earliest timestamp, on every node): later "
    "errors, flushes (status 5), timeouts and remote errors (-> 6) follow from it"
)


@dataclass(frozen=True)
class KnownError:
    name: str
    pattern: re.Pattern[str]
    meaning: str
    check: str
    failure: bool = True
    """False for a line that explains why NCCL fell back to sockets but failed nothing itself
    (a job on one node never needed RDMA)."""


def _completion(status: int) -> re.Pattern[str]:
    return re.compile(rf"Got completion\b.*?with (?:error |status=)(?:IBV_WC_\w+\()?{status}\b")


COMPLETIONS: tuple[KnownError, ...] = (
    KnownError(
        "completion error 12",
        _completion(12),
        "transport retry counter exceeded (IBV_WC_RETRY_EXC_ERR): the peer never acknowledged "
        "the packets. The path between the two NICs is broken (GID, PFC, routing, link) or the "
        "peer died",
        "whether the peer's process was still alive at that time (its own log); RoCE: the GID "
        "index (the pod's own RoCE v2 IPv4 entry), PFC/ECN on the switch ports, routing between "
        "the rails' subnets; InfiniBand: the port state and the subnet manager; then "
        "ib_write_bw between the two nodes",
    ),
    KnownError(
        "completion error 13",
        _completion(13),
        "receiver-not-ready retries exceeded (IBV_WC_RNR_RETRY_EXC_ERR): the peer posted no "
        "receive buffer in time; it hangs, died or fell far behind",
        "the peer's log for an earlier error or a hang",
    ),
    KnownError(
        "completion error 5",
        _completion(5),
        "work request flushed (IBV_WC_WR_FLUSH_ERR): the queue pair had already failed, so this "
        "is a consequence of an earlier error, not the cause",
        FIRST_ERROR,
    ),
    KnownError(
        "completion error 4",
        _completion(4),
        "local protection error (IBV_WC_LOC_PROT_ERR): the NIC could not access the registered "
        "buffer",
        "GPUDirect RDMA: nvidia_peermem loaded, PCIe ACS disabled between GPU and NIC, IOMMU "
        "off or in passthrough",
    ),
    KnownError(
        "completion error 10",
        _completion(10),
        "remote access error (IBV_WC_REM_ACCESS_ERR): the peer's NIC refused the access to its "
        "buffer",
        "GPUDirect RDMA on the peer (nvidia_peermem, ACS, IOMMU), and the same NCCL version on "
        "every rank",
    ),
    KnownError(
        "completion error",
        re.compile(r"Got completion\b.*?with (?:error |status=)"),
        "a failed RDMA work completion",
        "the status against enum ibv_wc_status (rdma-core verbs.h); " + FIRST_ERROR,
    ),
)

NO_VERBS = KnownError(
    "no libibverbs (rdma-core) in the image",
    re.compile(r"Failed to open libibverbs\.so"),
    "NCCL could not load libibverbs: the container image has no rdma-core, so NCCL cannot use "
    "any RDMA device and sends the traffic between nodes over TCP sockets (newer NCCL prints "
    "this as an INFO line, older as a WARN)",
    "install rdma-core in the image (Debian/Ubuntu: `apt-get install -y libibverbs1 "
    "ibverbs-providers`; RHEL/Rocky/Fedora: `dnf install -y rdma-core libibverbs`), or build on "
    "an NGC image (nvcr.io/nvidia/pytorch), which ships it; then `ldconfig -p | grep "
    "libibverbs` inside the pod lists it",
    failure=False,
)

NCCL_ERRORS: tuple[KnownError, ...] = (
    NO_VERBS,
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
        "NIC async event",
        re.compile(r"Got async (?:event|error)"),
        "the NIC reported an event on its own: a port going down, a GID table change, a "
        "catastrophic error",
        "the port's state and link_downed counter on that node, and the switch port",
    ),
    KnownError(
        "OFI completion error",
        re.compile(r"NET/OFI .*completed with error"),
        "a libfabric (EFA) operation of the AWS OFI plugin failed: the path to the peer broke or "
        "the peer died",
        "the peer's log at that time, then the EFA devices and security group between the "
        "nodes; " + FIRST_ERROR,
    ),
    KnownError(
        "OFI no provider",
        re.compile(r"NET/OFI .*fi_getinfo\(\) call failed"),
        "libfabric found no usable provider: the EFA device is not visible in the container",
        "that the pod requests the EFA resource and sees /dev/infiniband (fi_info -p efa "
        "inside the pod)",
    ),
    KnownError(
        "no NET plugin",
        re.compile(r"Failed to initialize any NET plugin"),
        "NCCL_NET names a transport that found no device (NCCL_NET=IB without an RDMA device)",
        "that the pod sees /dev/infiniband and an RDMA resource, and NCCL_IB_HCA matches a "
        "device of the pod",
    ),
    KnownError(
        "no socket interface",
        re.compile(r"Bootstrap ?: no socket interface found"),
        "NCCL found no network interface to bootstrap over: NCCL_SOCKET_IFNAME matches none of "
        "the pod's interfaces",
        "NCCL_SOCKET_IFNAME against `ip -br addr` inside the pod (a prefix match; `=` for an "
        "exact name, `^` to exclude)",
    ),
    KnownError(
        "duplicate GPU",
        re.compile(r"Duplicate GPU detected"),
        "two ranks use one GPU",
        "one rank per GPU: the process count per pod against its GPU request, "
        "CUDA_VISIBLE_DEVICES and the launcher's local rank",
    ),
    KnownError(
        "message truncated",
        re.compile(r"Message truncated"),
        "ranks called one collective with different sizes or types",
        "that every rank runs the same sequence of collectives with the same counts",
    ),
    KnownError(
        "CUDA failure",
        re.compile(r"Cuda failure|unhandled cuda error", re.IGNORECASE),
        "a CUDA call failed on this rank (out of memory, a GPU fault, a driver mismatch)",
        "nvidia-smi and the kernel log (Xid) on that node, and the rank's GPU memory use",
    ),
)

PEER_ERRORS: tuple[KnownError, ...] = (
    KnownError(
        "connection closed by peer",
        re.compile(r"NCCL WARN.*(?:Connection closed by (?:remote )?peer|reset by peer)"),
        "a peer closed its socket: its process died or was killed",
        FIRST_ERROR,
    ),
    KnownError(
        "remote error",
        re.compile(r"ncclRemoteError|remote process exited or there was a network error"),
        "NCCL failed because of another rank: a peer's process exited or the network between "
        "them failed",
        FIRST_ERROR,
    ),
    KnownError(
        "connection refused",
        re.compile(r"NCCL WARN.*Connection refused"),
        "a peer's bootstrap or proxy socket was not listening: it died or had not started",
        "that every rank started (the launcher's logs) and the address NCCL dialled is the "
        "peer's (NCCL_SOCKET_IFNAME)",
    ),
    KnownError(
        "timeout",
        re.compile(
            r"Watchdog caught collective operation timeout|NCCL WARN.*(?:timed out|[Tt]imeout)"
            r"|Connection timed out"
        ),
        "an operation or a connection did not complete in time: a peer died, hangs, or "
        "cannot be reached",
        FIRST_ERROR,
    ),
)

KNOWN: tuple[KnownError, ...] = COMPLETIONS + NCCL_ERRORS + PEER_ERRORS

UNKNOWN_WARN = KnownError(
    "NCCL WARN",
    re.compile(r"NCCL WARN"),
    "a warning from NCCL that this tool has no explanation for",
    "the lines before it from the same process (host:pid), and " + FIRST_ERROR,
)

RESULTS = {
    1: "a CUDA call failed (ncclUnhandledCudaError)",
    2: "a system call failed: sockets, memory, /dev/shm (ncclSystemError)",
    3: "an internal error, often after a peer or the network failed (ncclInternalError)",
    4: "an invalid argument (ncclInvalidArgument)",
    5: "invalid usage: NCCL was called or configured wrongly (ncclInvalidUsage)",
    6: "a remote error: a peer's process exited or the network failed (ncclRemoteError)",
}
"""NCCL's ncclResult_t (nccl.h), as the `file.cc:123 -> N` traces print it."""


def match(line: str) -> KnownError | None:
    return next((k for k in KNOWN if k.pattern.search(line)), None)


def returned(code: int) -> KnownError:
    """The finding for an NCCL call that returned `code`, seen only in the return-code traces."""
    return KnownError(
        f"NCCL returned {code}",
        re.compile(rf"-> {code}\b"),
        RESULTS.get(code, "an NCCL error code"),
        FIRST_ERROR + "; these traces only pass an error up, and NCCL_DEBUG=WARN or INFO "
        "prints the NCCL WARN line that names it",
    )
