"""The node agent publishing on a real Node, under its own ServiceAccount."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders.sysfs_tree import driver_proc, hgx_8gpu_8nic
from testbed.controlplane.components import Stack
from testbed.controlplane.objects import add_nodes
from testbed.controlplane.rest import Rest

NODE = "agent-node"
TAINT = {"key": keys.RDMA_UNHEALTHY, "effect": "NoSchedule"}


@pytest.fixture
def cpu_node(api: Rest) -> Iterator[str]:
    """A Node with no GPUs, so that no gang of the other tests is planned on it."""
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    node: Json = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }
    add_nodes(api, [node])
    yield NODE
    api.delete(f"/api/v1/nodes/{NODE}")


def wait_for(api: Rest, check: str, within: float = 60.0) -> Json:
    """The Node once `check` (ready-true, ready-false) holds of it."""
    deadline = time.monotonic() + within
    while True:
        node = api.get(f"/api/v1/nodes/{NODE}")
        ready = (node["metadata"].get("labels") or {}).get(keys.RDMA_READY)
        tainted = any(
            t["key"] == TAINT["key"] and t["effect"] == TAINT["effect"]
            for t in node["spec"].get("taints") or []
        )
        if (check == "ready-false" and ready == "false" and tainted) or (
            check == "ready-true" and ready == "true" and not tainted
        ):
            return node
        assert time.monotonic() < deadline, f"{check} not reached: {ready=} {tainted=}"
        time.sleep(0.2)


def test_the_agent_publishes_taints_and_untaints_its_node(
    stack: Stack, api: Rest, cpu_node: str, tmp_path: Path
) -> None:
    hgx_8gpu_8nic(tmp_path / "down", down=set(range(8)))
    hgx_8gpu_8nic(tmp_path / "up")
    sysfs = tmp_path / "sys"
    sysfs.symlink_to(tmp_path / "down")
    proc = driver_proc(
        tmp_path / "proc",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15",
        "6.1.0-18-amd64",
    )
    agent = stack.start_agent(cpu_node, sysfs, proc)
    try:
        node = wait_for(api, "ready-false")
        topology = json.loads(node["metadata"]["annotations"][keys.TOPOLOGY])
        assert [n["name"] for n in topology["nics"]] == [f"mlx5_{i}" for i in range(8)]

        sysfs.unlink()
        sysfs.symlink_to(tmp_path / "up")
        wait_for(api, "ready-true")
    finally:
        agent.stop()
    assert agent.popen is not None
    assert agent.popen.returncode == 0, agent.tail()
