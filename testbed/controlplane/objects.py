"""The e2e cluster's objects: GPU Nodes in leaves and spines, namespaces ready for pods.

No kubelet runs: Nodes are API objects whose status the harness writes, and pods bound to them
never start. 16 HGX-like 8-GPU nodes in 4 leaves of 4, two leaves per spine.
"""

from __future__ import annotations

import time

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders.nodes import hgx, node
from testbed.controlplane.apply import apply_all
from testbed.controlplane.components import Stack
from testbed.controlplane.render import with_name_label
from testbed.controlplane.rest import MERGE, Rest

LEAVES, PER_LEAF = 4, 4
DELETE_SECONDS = 30.0


def node_name(leaf: int, index: int) -> str:
    return f"gpu-l{leaf}-{index}"


def cluster_nodes() -> list[Json]:
    result = []
    for leaf in range(LEAVES):
        for index in range(PER_LEAF):
            labels = {keys.LEAF: f"leaf-{leaf}", keys.SPINE: f"spine-{leaf // 2}"}
            obj = node(node_name(leaf, index), hgx(), labels=labels)
            obj["metadata"]["labels"]["kubernetes.io/hostname"] = obj["metadata"]["name"]
            result.append(obj)
    return result


def add_nodes(api: Rest, nodes: list[Json]) -> None:
    """Create each Node, then write its status as a kubelet would (create drops it), and take
    off the not-ready taint that the TaintNodesByCondition admission plugin puts on a new Node,
    as the node lifecycle controller does once the Node reports Ready."""
    for obj in nodes:
        status = obj.pop("status")
        apply_all(api, [obj])
        path = f"/api/v1/nodes/{obj['metadata']['name']}"
        status["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
        api.patch(f"{path}/status", {"status": status}, MERGE)
        api.patch(path, {"spec": {"taints": None}}, MERGE)


def create_namespace(stack: Stack, name: str, labels: dict[str, str]) -> None:
    """A namespace whose default ServiceAccount is ready for pods (its token Secret made)."""
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    apply_all(stack.plane.admin, [with_name_label(obj)])
    stack.plane.service_account_token(name, "default")


def delete_pods(api: Rest, namespace: str) -> None:
    """Delete every pod at once, as `kubectl delete --grace-period=0 --force` does."""
    for pod in api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
        path = f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}"
        api.call("DELETE", path, {"gracePeriodSeconds": 0})
    deadline = time.monotonic() + DELETE_SECONDS
    while api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"pods of {namespace} not deleted after {DELETE_SECONDS:.0f}s")
        time.sleep(0.1)
