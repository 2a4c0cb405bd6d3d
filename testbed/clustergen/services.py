"""CPU pods beside the training pods: DaemonSet pods on every node (networking, device plugins,
exporters) and small Deployment pods spread over the nodes. On a real GPU cluster these are most
of the pods, and the extender's watch delivers every one of them."""

from __future__ import annotations

import random
from dataclasses import dataclass

from kube_rdma.core.objects import Json
from testbed.clustergen.hardware import Board, pod_ip
from testbed.clustergen.identity import random_uid, stamp
from testbed.clustergen.spec import MAX_DAEMON_PODS, ClusterSpec


@dataclass(frozen=True)
class Workload:
    """A DaemonSet or Deployment: where its pods live, what they run and request."""

    namespace: str
    name: str
    image: str
    cpu: str
    memory: str


DAEMONSETS = (
    Workload("kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.30.2", "100m", "128Mi"),
    Workload(
        "kube-system",
        "kube-multus-ds",
        "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.1.0",
        "100m",
        "64Mi",
    ),
    Workload(
        "gpu-operator",
        "nvidia-device-plugin-daemonset",
        "nvcr.io/nvidia/k8s-device-plugin:v0.15.0",
        "50m",
        "64Mi",
    ),
    Workload(
        "gpu-operator",
        "nvidia-dcgm-exporter",
        "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.6-3.4.2-ubuntu22.04",
        "100m",
        "512Mi",
    ),
    Workload("kube-rdma", "kube-rdma-agent", "ghcr.io/kube-rdma/kube-rdma:0.1.0", "50m", "64Mi"),
    Workload(
        "kube-system",
        "rdma-shared-dp-ds",
        "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.4.0",
        "50m",
        "32Mi",
    ),
    Workload(
        "monitoring", "node-exporter", "quay.io/prometheus/node-exporter:v1.8.1", "100m", "180Mi"
    ),
    Workload(
        "gpu-operator",
        "gpu-feature-discovery",
        "nvcr.io/nvidia/gpu-feature-discovery:v0.8.2",
        "10m",
        "32Mi",
    ),
)
assert len(DAEMONSETS) == MAX_DAEMON_PODS
DEPLOYMENTS = (
    Workload("team-llm", "tokenizer-svc", "registry.example.com/llm/tokenizer:2.4", "2", "4Gi"),
    Workload("team-vision", "data-loader", "registry.example.com/vision/loader:1.9", "4", "8Gi"),
    Workload(
        "team-recsys", "feature-store", "registry.example.com/recsys/features:0.7", "1", "2Gi"
    ),
    Workload("ml-research", "jupyter", "quay.io/jupyter/pytorch-notebook:2024-06-03", "2", "8Gi"),
    Workload("monitoring", "log-shipper", "docker.io/fluent/fluent-bit:3.0.7", "500m", "512Mi"),
)
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName suffix letters


class CpuPods:
    """The spec's DaemonSet and Deployment pods, Running on the boards."""

    def __init__(self, spec: ClusterSpec, boards: list[Board], rng: random.Random) -> None:
        self.spec, self.boards, self.rng = spec, boards, rng
        self.version = 2_000_000
        self.names: set[str] = set()

    def all(self) -> list[Json]:
        daemons = DAEMONSETS[: self.spec.daemon_pods_per_node]
        pods = [self._daemon(ds, board) for board in self.boards for ds in daemons]
        for _ in range(self.spec.cpu_pods):
            pods.append(self._replica(self.rng.choice(DEPLOYMENTS), self.rng.choice(self.boards)))
        return pods

    def _daemon(self, ds: Workload, board: Board) -> Json:
        pod = self._pod(ds, self._suffix(f"{ds.name}-"), board, "DaemonSet", ds.name)
        pod["metadata"]["labels"].update(
            {"controller-revision-hash": "6d4b8f7c9d", "pod-template-generation": "1"}
        )
        # The DaemonSet controller pins each pod to its node by field, not by nodeName alone.
        term = {"key": "metadata.name", "operator": "In", "values": [board.name]}
        selector = {"nodeSelectorTerms": [{"matchFields": [term]}]}
        pod["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}
        }
        pod["spec"]["priorityClassName"] = "system-node-critical"
        return pod

    def _replica(self, deployment: Workload, board: Board) -> Json:
        replica_set = f"{deployment.name}-7d9f8b6c4"
        pod = self._pod(
            deployment, self._suffix(f"{replica_set}-"), board, "ReplicaSet", replica_set
        )
        pod["metadata"]["labels"]["pod-template-hash"] = "7d9f8b6c4"
        return pod

    def _pod(self, workload: Workload, name: str, board: Board, kind: str, owner: str) -> Json:
        self.version += 1
        created = 10 * 86400 + self.rng.randrange(20 * 86400)
        owner_ref = {
            "apiVersion": "apps/v1",
            "kind": kind,
            "name": owner,
            "uid": random_uid(self.rng),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "generateName": name[: -len(name.rpartition("-")[2])],
                "namespace": workload.namespace,
                "uid": random_uid(self.rng),
                "resourceVersion": str(self.version),
                "creationTimestamp": stamp(created),
                "labels": {"app.kubernetes.io/name": workload.name},
                "ownerReferences": [owner_ref],
            },
            "spec": {"containers": [_container(workload)], "nodeName": board.name},
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "True"},
                ],
                "hostIP": board.host_ip,
                "podIP": pod_ip(board, self.rng),
                "startTime": stamp(created + 3),
                "qosClass": "Burstable",
            },
        }

    def _suffix(self, prefix: str) -> str:
        """A generateName suffix the apiserver would give: drawn again where taken."""
        while (name := prefix + "".join(self.rng.choices(ALPHABET, k=5))) in self.names:
            pass
        self.names.add(name)
        return name


def _container(workload: Workload) -> Json:
    return {
        "name": workload.name,
        "image": workload.image,
        "resources": {
            "requests": {"cpu": workload.cpu, "memory": workload.memory},
            "limits": {"memory": workload.memory},
        },
    }
