"""The node agent publishing to the HTTP-level fake apiserver through kubernetes-asyncio: the
topology annotation and readiness label, and the rdma-unhealthy taint with `taint_unhealthy`."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from agent.publisher import Agent, AgentSettings
from agent.sysfs import SysfsError
from agent.sysfs import scan as scan_sysfs
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Topology, encode
from testbed.builders import gb300_tree, sysfs_tree
from testbed.fakeapi import FakeApiServer
from testbed.net import refusing_port

TOPOLOGIES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"

NODE = "gpu-node-1"
NODE_PATH = f"/api/v1/nodes/{NODE}"
INJECTED = "fake apiserver: injected failure"
NO_PROC = Path("/nonexistent/proc")
OURS = {"key": "kube-rdma.io/rdma-unhealthy", "effect": "NoSchedule"}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
OTHERS = [
    {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
    UNREACHABLE | {"timeAdded": "2024-05-01T00:00:00Z"},
    {"key": "kube-rdma.io/rdma-unhealthy", "effect": "PreferNoSchedule"},  # another effect
]


def settings(root: Path, taint_unhealthy: bool = False) -> AgentSettings:
    return AgentSettings(
        node_name=NODE,
        sysfs_root=root,
        proc_root=NO_PROC,
        interval=30.0,
        recover_after=2,
        taint_unhealthy=taint_unhealthy,
        min_patch_gap=0.0,  # unpaced: pacing is tested in test_faults.py
        max_patch_gap=0.0,
    )


def scan(root: Path) -> Topology:
    return scan_sysfs(root, NO_PROC)


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
    document = (TOPOLOGIES / "hgx-8gpu-8nic.json").read_text().rstrip("\n")
    assert patches(fake_api) == [("application/merge-patch+json", expected_patch(document, "true"))]
    stored = fake_api.get("nodes", NODE)["metadata"]
    assert stored["annotations"] == {"kube-rdma.io/topology": document}
    assert stored["labels"] == {"kubernetes.io/os": "linux", "kube-rdma.io/rdma-ready": "true"}

    assert await agent.step() == 30.0
    assert len(patches(fake_api)) == 1, "nothing changed: no second patch"

    restarted = Agent(core_v1, settings(tmp_path))
    await restarted.step()
    assert len(patches(fake_api)) == 1, "a restarted agent starts from what the node carries"


async def test_a_data_direct_function_read_late_moves_its_nics_pairs(
    fake_api: FakeApiServer,
    core_v1: Any,
    node: None,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """While GPU 0's Data Direct function cannot be read its NIC pairs through its own
    function, with one warning; once it can, the next scan publishes the pairs through it."""
    gb300_tree.gb300_node(tmp_path)
    vpd = tmp_path / "bus/pci/devices/0008:03:00.0/vpd"
    image = vpd.read_bytes()
    sysfs_tree.SysfsTree.unreadable(vpd)
    agent = Agent(core_v1, settings(tmp_path))
    with caplog.at_level(logging.INFO, logger="kube_rdma.agent"):
        await agent.step()
        await agent.step()
        vpd.rmdir()
        vpd.write_bytes(image)
        await agent.step()
    problem = (
        f"0008:03:00.0 (ConnectX-8 Data Direct): cannot read {vpd}: Is a directory; "
        "its NIC pairs with GPUs through the NIC's own function"
    )
    assert [(r.levelname, r.getMessage()) for r in caplog.records if "scan" in r.getMessage()] == [
        ("WARNING", f"scan: {problem}"),
        ("INFO", f"scan no longer: {problem}"),
    ]
    documents = [
        body["metadata"]["annotations"]["kube-rdma.io/topology"] for _, body in patches(fake_api)
    ]
    assert len(documents) == 2
    assert '{"gpu":0,"nic":"mlx5_1","level":"NODE"}' in documents[0]
    assert documents[1] == (TOPOLOGIES / "gb300-data-direct.json").read_text().rstrip("\n")


async def test_link_going_down_is_published_and_recovery_waits_for_clean_scans(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    up, down = tmp_path / "up", tmp_path / "down"
    sysfs_tree.dual_port_ib_node(up)
    sysfs_tree.dual_port_ib_node(down)
    (down / "class/infiniband/mlx4_0/ports/1/state").write_text("1: DOWN\n")
    roots = iter([up, down, up, up, up])
    agent = Agent(core_v1, settings(up), scan=lambda _: scan(next(roots)))
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
        "kube-rdma.io/topology": (TOPOLOGIES / "shared-nic-node.json").read_text().rstrip("\n")
    }


async def test_scan_errors_keep_the_published_state(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    sysfs_tree.shared_nic_node(tmp_path)
    results: list[Topology | Exception] = [scan(tmp_path), SysfsError("rate: unreadable")]

    def flaky(_: list[str]) -> Topology:
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
    with refusing_port() as port:
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


def up_and_down(tmp_path: Path) -> tuple[Path, Path]:
    """Two scans of one node: its rail up, then down."""
    up, down = tmp_path / "up", tmp_path / "down"
    sysfs_tree.dual_port_ib_node(up)
    sysfs_tree.dual_port_ib_node(down)
    (down / "class/infiniband/mlx4_0/ports/1/state").write_text("1: DOWN\n")
    return up, down


def node_with(taints: list[Json], labels: dict[str, str] | None = None) -> Json:
    return {"metadata": {"name": NODE, "labels": labels or {}}, "spec": {"taints": taints}}


def published_down(api: FakeApiServer, down: Path) -> Json:
    """The Node as an earlier agent left it for the `down` scan, without the taint."""
    node = node_with(OTHERS, {"kube-rdma.io/rdma-ready": "false"})
    node["metadata"]["annotations"] = {"kube-rdma.io/topology": encode(scan(down))}
    return api.create("nodes", node)


def stored_taints(api: FakeApiServer) -> list[Json]:
    taints: list[Json] = api.get("nodes", NODE).get("spec", {}).get("taints", [])
    return taints


async def test_unhealthy_rails_taint_the_node_with_the_labels_hysteresis(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path
) -> None:
    created = fake_api.create("nodes", node_with(OTHERS))
    up, down = up_and_down(tmp_path)
    roots = iter([up, down, up, down, up, up])
    agent = Agent(core_v1, settings(up, taint_unhealthy=True), scan=lambda _: scan(next(roots)))
    seen = []
    for _ in range(6):
        assert await agent.step() == 30.0
        labels = fake_api.get("nodes", NODE)["metadata"]["labels"]
        seen.append((labels["kube-rdma.io/rdma-ready"], stored_taints(fake_api)))
    tainted = [*OTHERS, OURS]
    assert seen == [
        ("true", OTHERS),
        ("false", tainted),  # down
        ("false", tainted),  # up: one clean scan of two
        ("false", tainted),  # down again
        ("false", tainted),  # up: one clean scan of two
        ("true", OTHERS),  # two clean scans
    ]
    version = int(created["metadata"]["resourceVersion"])
    taint_patches = [body for _, body in patches(fake_api) if "spec" in body]
    assert taint_patches == [  # each after that scan's patch of the label and document
        {"metadata": {"resourceVersion": str(version + 2)}, "spec": {"taints": tainted}},
        {"metadata": {"resourceVersion": str(version + 7)}, "spec": {"taints": OTHERS}},
    ]


async def test_without_the_option_unhealthy_rails_leave_the_taints_alone(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path
) -> None:
    fake_api.create("nodes", node_with(OTHERS))
    up, down = up_and_down(tmp_path)
    roots = iter([up, down])
    agent = Agent(core_v1, settings(up), scan=lambda _: scan(next(roots)))
    await agent.step()
    await agent.step()
    assert fake_api.get("nodes", NODE)["metadata"]["labels"] == {"kube-rdma.io/rdma-ready": "false"}
    assert stored_taints(fake_api) == OTHERS
    assert [r.method for r in fake_api.requests] == ["GET", "PATCH", "PATCH"]


@pytest.mark.parametrize("taint_unhealthy", [True, False])
async def test_a_restarted_agent_removes_the_taint_once_the_rails_are_healthy(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path, taint_unhealthy: bool
) -> None:
    """Also without the option: turning it off never leaves a node tainted for good."""
    fake_api.create("nodes", node_with([OURS, *OTHERS], {"kube-rdma.io/rdma-ready": "false"}))
    sysfs_tree.dual_port_ib_node(tmp_path)
    await Agent(core_v1, settings(tmp_path, taint_unhealthy)).step()
    assert stored_taints(fake_api) == OTHERS
    assert fake_api.get("nodes", NODE)["metadata"]["labels"] == {"kube-rdma.io/rdma-ready": "true"}


class RacingApi:
    """CoreV1Api whose Node reads are each followed, `races` times, by another writer's change
    to the Node's taints, so that the agent's patch carries a stale resourceVersion."""

    def __init__(self, api: Any, fake_api: FakeApiServer, races: int) -> None:
        self._api = api
        self._fake_api = fake_api
        self._races = races
        self.patch_node = api.patch_node

    async def read_node(self, *args: Any, **kwargs: Any) -> Any:
        response = await self._api.read_node(*args, **kwargs)
        if self._races > 0:
            self._races -= 1
            taint = {"key": f"example.com/race-{self._races}", "effect": "NoSchedule"}
            taints = [*stored_taints(self._fake_api), taint]
            self._fake_api.patch("nodes", NODE, {"spec": {"taints": taints}})
        return response


async def test_a_conflict_is_retried_from_a_fresh_read(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, down = up_and_down(tmp_path)
    version = int(published_down(fake_api, down)["metadata"]["resourceVersion"])
    api = RacingApi(core_v1, fake_api, races=3)  # the agent's first read, then two of set_taint's
    agent = Agent(api, settings(down, taint_unhealthy=True))
    with caplog.at_level(logging.INFO, logger="kube_rdma.agent"):
        assert await agent.step() == 30.0
    raced = [{"key": f"example.com/race-{i}", "effect": "NoSchedule"} for i in (2, 1, 0)]
    assert stored_taints(fake_api) == [*OTHERS, *raced, OURS]
    assert [(r.method, r.body and r.body["metadata"]) for r in fake_api.requests] == [
        ("GET", None),
        ("GET", None),
        ("PATCH", {"resourceVersion": str(version + 1)}),
        ("GET", None),
        ("PATCH", {"resourceVersion": str(version + 2)}),
        ("GET", None),
        ("PATCH", {"resourceVersion": str(version + 3)}),
    ]
    conflict = (
        f'Conflict: Operation cannot be fulfilled on nodes "{NODE}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    assert [r.getMessage() for r in caplog.records] == [
        f"patch Node {NODE}: {conflict}; reading the Node again",
        f"patch Node {NODE}: {conflict}; reading the Node again",
        "tainted kube-rdma.io/rdma-unhealthy:NoSchedule",
    ]


async def test_conflicts_that_do_not_end_back_off(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, down = up_and_down(tmp_path)
    published_down(fake_api, down)
    fake_api.fail("PATCH", NODE_PATH, 409, times=5)
    agent = Agent(core_v1, settings(down, taint_unhealthy=True))
    with caplog.at_level(logging.WARNING, logger="kube_rdma.agent"):
        assert [await agent.step() for _ in range(2)] == [1.0, 30.0]
    assert [r.getMessage() for r in caplog.records] == [
        f"patch Node {NODE}: Conflict: {INJECTED}; retrying in 1s"
    ]
    assert [r.method for r in fake_api.requests] == ["GET", *["GET", "PATCH"] * 6]
    assert stored_taints(fake_api) == [*OTHERS, OURS]
