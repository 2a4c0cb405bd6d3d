"""Node objects as the apiserver returns them: labels for the network domains, the topology
annotation and readiness label where the agent ran, capacity, conditions and node info."""

from __future__ import annotations

import random
import uuid

from agent.health import rdma_ready
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import encode
from testbed.clustergen.hardware import Board, board_topology, pod_subnet
from testbed.clustergen.identity import random_uid, stamp
from testbed.clustergen.spec import (
    GPU,
    LEAF_LABEL,
    RDMA_SHARED,
    SPINE_LABEL,
    ZONE_LABEL,
    ClusterSpec,
)

SPINES_PER_ZONE = 4
INSTANCE_TYPES = {8: "hgx-h100-8g", 4: "hgx-h100-4g"}
CPU_MEMORY = {8: ("192", "2Ti"), 4: ("96", "1Ti")}


def node(spec: ClusterSpec, board: Board, rng: random.Random) -> Json:
    """The board's Node, its topology document drawn from `rng` whether published or not."""
    labels = {
        "kubernetes.io/hostname": board.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": INSTANCE_TYPES[board.gpus],
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": str(board.gpus),
        LEAF_LABEL: f"leaf-{board.leaf:03d}",
        SPINE_LABEL: f"spine-{board.spine:02d}",
        ZONE_LABEL: f"zone-{board.spine // SPINES_PER_ZONE}",
    }
    annotations = {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    # Built even where no agent runs, so the no-agent nodes do not shift the other nodes' draws.
    topology = board_topology(board, rng)
    if board.agent:
        annotations[keys.TOPOLOGY] = encode(topology)
        labels[keys.RDMA_READY] = "true" if rdma_ready(topology) else "false"
    cpu, memory = CPU_MEMORY[board.gpus]
    resources = {"cpu": cpu, "memory": memory, "pods": "110", GPU: str(board.gpus)}
    resources.update(_rdma_allocatable(spec, board.gpus))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": board.name,
            "uid": random_uid(rng),
            "resourceVersion": str(1000 + board.index),
            "creationTimestamp": stamp(board.index),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"podCIDR": _pod_cidr(board), "podCIDRs": [_pod_cidr(board)]},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": _node_conditions(),
            "addresses": [
                {"type": "InternalIP", "address": board.host_ip},
                {"type": "Hostname", "address": board.name},
            ],
            "nodeInfo": _node_info(rng),
        },
    }


def _rdma_allocatable(spec: ClusterSpec, gpus: int) -> dict[str, str]:
    if spec.per_rail_resources:
        return {f"{RDMA_SHARED}{rail}": "1" for rail in range(1, gpus + 1)}
    return {RDMA_SHARED: str(gpus)}


def _pod_cidr(board: Board) -> str:
    return pod_subnet(board)[0]


_HEARTBEAT = stamp(60 * 86400)


def _node_conditions() -> list[Json]:
    pressure = [
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ]
    rows = [(kind, "False", reason, message) for kind, reason, message in pressure]
    rows.append(("Ready", "True", "KubeletReady", "kubelet is posting ready status"))
    return [
        {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": _HEARTBEAT,
            "lastTransitionTime": stamp(3600),
        }
        for kind, status, reason, message in rows
    ]


def _node_info(rng: random.Random) -> Json:
    return {
        "machineID": uuid.UUID(int=rng.getrandbits(128)).hex,
        "systemUUID": random_uid(rng),
        "bootID": random_uid(rng),
        "kernelVersion": "5.15.0-113-generic",
        "osImage": "Ubuntu 22.04.4 LTS",
        "containerRuntimeVersion": "containerd://1.7.18",
        "kubeletVersion": "v1.33.10",
        # Empty, as a 1.33 kubelet reports it (DisableNodeKubeProxyVersion, on by default since
        # 1.33); the schema still requires the field.
        "kubeProxyVersion": "",
        "operatingSystem": "linux",
        "architecture": "amd64",
    }
