"""GPUDirect RDMA: a pod that asks for it (`kube-rdma.io/require-gdr: "true"`) runs only where
the NICs can read and write GPU memory directly.

Without GPUDirect RDMA, NCCL still runs over RDMA but stages every transfer through host memory,
which costs bandwidth and latency a pod may not accept. A node without a path fails the pod
whatever is freed: loading a kernel module is an admin's act, not something preemption does.
"""

from __future__ import annotations

from extender.cluster.model import NodeInfo
from extender.filters.verdict import PASS, Verdict, never
from extender.pairing import Rails
from extender.podview import PodView
from kube_rdma.core import keys

NO_PATH = (
    "no GPUDirect RDMA: nvidia_peermem is not loaded and there is no dma-buf path; load "
    "nvidia_peermem (modprobe nvidia_peermem, or the GPU Operator's driver.rdma.enabled=true), "
    "or run the NVIDIA open kernel module on Linux 5.12 or newer for dma-buf"
)
NOT_REPORTED = (
    f"GPUDirect RDMA unknown: the node's {keys.TOPOLOGY} document does not report it (an older "
    "kube-rdma agent, or one that cannot read sysfs); upgrade the agent or mount the host's /sys"
)


def check(pod: PodView, node: NodeInfo, rails: Rails | None) -> Verdict:
    if not pod.require_gdr or pod.problems:
        return PASS  # an unreadable annotation is the RDMA filter's reason, on every node
    if node.topology is None:
        return never(f"GPUDirect RDMA unknown: {node.topology_error}")
    gdr = node.topology.gdr
    if gdr is None:
        return never(NOT_REPORTED)
    return PASS if gdr.available else never(NO_PATH)
