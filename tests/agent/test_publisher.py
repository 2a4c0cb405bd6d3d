"""The node agent publishing to the HTTP-level fake apiserver through kubernetes-asyncio."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from agent.publisher import Agent, AgentSettings
from agent.sysfs import SysfsError, scan
from kube_rdma.core.topology import Topology, encode
from testbed.builders import sysfs_tree
from testbed.fakeapi import FakeApiServer
from testbed.net import free_port

NODE = "gpu-node-1"
NODE_PATH = f"/api/v1/nodes/{NODE}"
INJECTED = "fake apiserver: injected failure"


def settings(root: Path) -> AgentSettings:
    return AgentSettings(node_name=NODE, sysfs_root=root, interval=30.0, recover_after=2)


@pytest.fixture
def node(fake_api: FakeApiServer) -> None:
    fake_api.create("nodes", {"metadata": {"name": NODE, "labels": {"kubernetes.io/os": "linux"}}})


def patches(api: FakeApiServer) -> list[tuple[str | None, Any]]:
    return [(r.content_type, r.body) for r in api.requests if r.method == "PATCH"]


def expected_patch(document: str, ready: str) -> dict[str, Any]:
    return {
        "metadata": {
            "annotations": {"kube-rdma.io/topology": document},
            "labels": {"kube-rdma.io/rdma-ready": ready},
        }
    }


async def test_publishes_the_document_and_label_once(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    sysfs_tree.hgx_8gpu_8nic(tmp_path)
    agent = Agent(core_v1, settings(tmp_path))
    assert await agent.step() == 30.0
    document = encode(scan(tmp_path))
    assert patches(fake_api) == [("application/merge-patch+json", expected_patch(document, "true"))]
    stored = fake_api.get("nodes", NODE)["metadata"]
    assert stored["annotations"] == {"kube-rdma.io/topology": document}
    assert stored["labels"] == {"kubernetes.io/os": "linux", "kube-rdma.io/rdma-ready": "true"}

    assert await agent.step() == 30.0
    assert len(patches(fake_api)) == 1, "nothing changed: no second patch"

    restarted = Agent(core_v1, settings(tmp_path))
    await restarted.step()
    assert len(patches(fake_api)) == 1, "a restarted agent starts from what the node carries"


async def test_link_going_down_is_published_and_recovery_waits_for_clean_scans(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    up, down = tmp_path / "up", tmp_path / "down"
    sysfs_tree.dual_port_ib_node(up)
    sysfs_tree.dual_port_ib_node(down)
    (down / "class/infiniband/mlx4_0/ports/1/state").write_text("1: DOWN\n")
    roots = iter([up, down, up, up, up])
    agent = Agent(core_v1, settings(up), scan=lambda: scan(next(roots)))
    for _ in range(5):
        await agent.step()
    labels = [
        body["metadata"]["labels"]["kube-rdma.io/rdma-ready"] for _, body in patches(fake_api)
    ]
    assert labels == ["true", "false", "false", "true"]
    # scan 3 (up again, 1 clean scan of 2) changed the document's port state but not health yet


async def test_api_errors_back_off_then_recover(
    fake_api: FakeApiServer,
    core_v1: Any,
    node: None,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sysfs_tree.shared_nic_node(tmp_path)
    fake_api.fail("PATCH", NODE_PATH, 500, times=2)
    fake_api.fail("GET", NODE_PATH, 503, times=1)
    agent = Agent(core_v1, settings(tmp_path))
    with caplog.at_level(logging.WARNING, logger="kube_rdma.agent"):
        assert [await agent.step() for _ in range(4)] == [1.0, 2.0, 4.0, 30.0]
    assert [r.getMessage() for r in caplog.records] == [
        f"read Node {NODE}: ServiceUnavailable: {INJECTED}; retrying in 1s",
        f"patch Node {NODE}: InternalError: {INJECTED}; retrying in 2s",
        f"patch Node {NODE}: InternalError: {INJECTED}; retrying in 4s",
    ]
    assert fake_api.get("nodes", NODE)["metadata"]["annotations"] == {
        "kube-rdma.io/topology": encode(scan(tmp_path))
    }


async def test_scan_errors_keep_the_published_state(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    sysfs_tree.shared_nic_node(tmp_path)
    results: list[Topology | Exception] = [scan(tmp_path), SysfsError("rate: unreadable")]

    def flaky() -> Topology:
        result = results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result

    agent = Agent(core_v1, settings(tmp_path), scan=flaky)
    assert await agent.step() == 30.0
    assert await agent.step() == 30.0
    assert len(patches(fake_api)) == 1
    assert fake_api.get("nodes", NODE)["metadata"]["labels"]["kube-rdma.io/rdma-ready"] == "true"


async def test_an_unreachable_apiserver_backs_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sysfs_tree.shared_nic_node(tmp_path)
    port = free_port()
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    async with client.ApiClient(configuration) as api:
        agent = Agent(client.CoreV1Api(api), settings(tmp_path))
        with caplog.at_level(logging.WARNING, logger="kube_rdma.agent"):
            assert [await agent.step() for _ in range(2)] == [1.0, 2.0]
    assert caplog.records[0].getMessage() == (
        f"read Node {NODE}: Unreachable: Cannot connect to host 127.0.0.1:{port} ssl:default "
        f"[Connect call failed ('127.0.0.1', {port})] (check the apiserver address and the "
        "network path to it); retrying in 1s"
    )


async def test_run_sleeps_between_steps(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    sysfs_tree.shared_nic_node(tmp_path)
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) == 3:
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await Agent(core_v1, settings(tmp_path), sleep=sleep).run()
    assert delays == [30.0, 30.0, 30.0]
    assert len(patches(fake_api)) == 1
