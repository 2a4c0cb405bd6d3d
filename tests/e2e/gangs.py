"""Gang pods for the e2e tests, and waiting on what the apiserver stores of them."""

from __future__ import annotations

import time
from collections.abc import Iterable

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.controlplane.rest import Rest

SCHEDULER = "rdma-scheduler"


def gang_pod(name: str, namespace: str, gang: str, size: int, gpus: int = 8) -> Json:
    """An 8-GPU member of a kube-rdma.io/gang, for rdma-scheduler."""
    annotations = {keys.GANG: gang, keys.GANG_SIZE: str(size)}
    pod = nodes.pod(name, gpus=gpus, annotations=annotations, namespace=namespace)
    del pod["metadata"]["uid"], pod["status"]
    pod["spec"]["schedulerName"] = SCHEDULER
    return pod


def members(gang: str, namespace: str, size: int) -> list[Json]:
    return [gang_pod(f"{gang}-{i}", namespace, gang, size) for i in range(size)]


def create_pods(api: Rest, pods: Iterable[Json]) -> None:
    for pod in pods:
        api.post(f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", pod)


def placements(api: Rest, namespace: str, prefix: str) -> dict[str, str | None]:
    """Pod name -> the node the apiserver stores for it (None: not bound)."""
    found = api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName")
        for p in found
        if p["metadata"]["name"].startswith(prefix + "-")
    }


def wait_bound(api: Rest, namespace: str, gang: str, size: int, within: float = 120.0) -> float:
    """Seconds until all `size` members are bound; AssertionError with where they are when
    `within` passes first."""
    start = time.monotonic()
    while True:
        where = placements(api, namespace, gang)
        if len(where) == size and all(where.values()):
            return time.monotonic() - start
        if time.monotonic() - start > within:
            raise AssertionError(f"gang {gang} not bound whole after {within}s: {where}")
        time.sleep(0.05)


def leaf_of(node: str) -> str:
    """gpu-l2-3 -> leaf-2 (the e2e cluster's naming)."""
    return f"leaf-{node.split('-')[1].removeprefix('l')}"


def spine_of(node: str) -> str:
    return f"spine-{int(node.split('-')[1].removeprefix('l')) // 2}"
