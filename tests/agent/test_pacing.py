"""The agent under faults, against the fake apiserver: flapping and noisy ports do not flood the
API with patches, a real change still goes out within a bounded delay, and what a scan cannot
read is logged once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.pacing import PatchPacer
from agent.publisher import Agent, AgentSettings
from agent.sysfs import Problems, scan
from kube_rdma.core.topology import Topology
from testbed.builders import sysfs_tree
from testbed.fakeapi import FakeApiServer

NODE = "gpu-node-1"
NO_PROC = Path("/nonexistent/proc")
INTERVAL = 30.0
PORT_1 = "class/infiniband/mlx4_0/ports/1"


class Clock:
    """Monotonic seconds that only move when the agent sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def node(fake_api: FakeApiServer) -> None:
    fake_api.create("nodes", {"metadata": {"name": NODE}})


def patch_bodies(api: FakeApiServer) -> list[Any]:
    return [r.body for r in api.requests if r.method == "PATCH"]


async def run_scans(
    api: FakeApiServer, core_v1: Any, root: Path, scans: int, before_scan: Callable[[int], None]
) -> list[float]:
    """Run the agent for `scans` scans, calling `before_scan(n)` ahead of scan n, the clock
    moving only by the agent's sleeps; the times at which it patched the Node."""
    clock = Clock()
    count = 0
    patched: list[float] = []

    def scanning(problems: Problems) -> Topology:
        nonlocal count
        before_scan(count)
        count += 1
        return scan(root, NO_PROC, problems)

    async def sleep(delay: float) -> None:
        patched.extend([clock.now] * (len(patch_bodies(api)) - len(patched)))
        clock.now += delay
        if count == scans:
            raise asyncio.CancelledError

    settings = AgentSettings(node_name=NODE, sysfs_root=root, interval=INTERVAL)
    with pytest.raises(asyncio.CancelledError):
        await Agent(core_v1, settings, scan=scanning, sleep=sleep, clock=clock).run()
    return patched


async def test_a_flapping_port_costs_a_handful_of_patches(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    tree = sysfs_tree.dual_port_ib_node(tmp_path)
    tree.root.joinpath("class/infiniband/mlx4_0/ports/2/state").write_text("4: ACTIVE\n")
    tree.root.joinpath("class/infiniband/mlx4_0/ports/2/phys_state").write_text("5: LinkUp\n")
    patched = await run_scans(
        fake_api, core_v1, tmp_path, 50, lambda n: tree.port_state("mlx4_0", 1, up=n % 2 == 0)
    )
    # 50 scans, 25 minutes: the first patch, then gaps of 60 s doubling to 10 minutes (from 60,
    # a patch at the first scan that differs from what the Node carries)
    assert patched == [0.0, 60.0, 210.0, 450.0, 930.0]
    assert patch_bodies(fake_api)[-1]["metadata"]["labels"] == {"kube-rdma.io/rdma-ready": "true"}


def counters(tree: sysfs_tree.SysfsTree, symbol_errors: int) -> None:
    tree.root.joinpath(PORT_1, "counters/symbol_error").write_text(f"{symbol_errors}\n")


async def test_a_noisy_port_patches_ever_more_rarely(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    """symbol_error grows by one a scan (2 a minute: under its rule, so the port stays healthy
    and only the document changes)."""
    tree = sysfs_tree.dual_port_ib_node(tmp_path)
    patched = await run_scans(fake_api, core_v1, tmp_path, 71, lambda n: counters(tree, 3 + n))
    assert patched == [0.0, 60.0, 180.0, 420.0, 900.0, 1500.0, 2100.0]
    stored = fake_api.get("nodes", NODE)["metadata"]
    assert '"symbol_error":73' in stored["annotations"]["kube-rdma.io/topology"]


async def test_a_change_of_the_label_is_not_paced(
    fake_api: FakeApiServer, core_v1: Any, node: None, tmp_path: Path
) -> None:
    """Scan 1 moves a counter (paced: out at 60 s with scan 2's); scan 3 takes the node's only
    healthy port down: out at once."""
    tree = sysfs_tree.dual_port_ib_node(tmp_path)
    steps: dict[int, Callable[[], None]] = {
        1: lambda: counters(tree, 4),
        3: lambda: tree.port_state("mlx4_0", 1, up=False),
    }
    patched = await run_scans(
        fake_api, core_v1, tmp_path, 4, lambda n: steps.get(n, lambda: None)()
    )
    assert patched == [0.0, 60.0, 90.0]
    labels = [
        body["metadata"]["labels"]["kube-rdma.io/rdma-ready"] for body in patch_bodies(fake_api)
    ]
    assert labels == ["true", "true", "false"]


# (seconds since the start, "wait" asks the wait / "patch" patches): the expected wait
PACER_STEPS = [
    (0, "wait", 0.0),  # the first patch is never held
    (0, "patch", None),
    (10, "wait", 50.0),
    (60, "patch", None),  # within 2 x 60 s of the last: the gap doubles to 120
    (100, "wait", 80.0),
    (180, "patch", None),  # 240
    (420, "patch", None),  # 480
    (900, "patch", None),  # 600, the most
    (1500, "patch", None),
    (1600, "wait", 500.0),
    (3000, "wait", 0.0),
    (3000, "patch", None),  # a calm spell (over twice the gap): back to 60
    (3001, "wait", 59.0),
]


def test_the_pacer_widens_its_gap_while_patches_keep_coming_and_resets_when_calm() -> None:
    clock = Clock()
    pacer = PatchPacer(clock=clock)
    waits: list[float | None] = []
    for now, action, _ in PACER_STEPS:
        clock.now = now
        if action == "wait":
            waits.append(pacer.wait())
        else:
            pacer.patched()
            waits.append(None)
    assert waits == [expected for _, _, expected in PACER_STEPS]


def test_pacer_gaps_are_checked() -> None:
    with pytest.raises(ValueError, match="0 <= min_gap <= max_gap"):
        PatchPacer(min_gap=60, max_gap=30)


async def test_what_a_scan_cannot_read_is_logged_once(
    fake_api: FakeApiServer,
    core_v1: Any,
    node: None,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tree = sysfs_tree.dual_port_ib_node(tmp_path)
    link_layer = tmp_path / PORT_1 / "link_layer"

    def before_scan(n: int) -> None:
        if n == 1:
            tree.unreadable(link_layer)
        if n == 4:
            link_layer.rmdir()
            link_layer.write_text("InfiniBand\n")

    with caplog.at_level(logging.INFO, logger="kube_rdma.agent"):
        patched = await run_scans(fake_api, core_v1, tmp_path, 5, before_scan)
    problem = f"mlx4_0 port 1: {link_layer}: cannot read: Is a directory"
    assert [(r.levelname, r.getMessage()) for r in caplog.records if "scan" in r.getMessage()] == [
        ("WARNING", f"scan: {problem}"),
        ("INFO", f"scan no longer: {problem}"),
    ]
    labels = [
        body["metadata"]["labels"]["kube-rdma.io/rdma-ready"] for body in patch_bodies(fake_api)
    ]
    assert (patched, labels) == ([0.0, 30.0, 120.0], ["true", "false", "true"])


async def test_a_failing_scan_is_logged_once(
    fake_api: FakeApiServer, core_v1: Any, node: None, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(_: Problems) -> Topology:
        raise PermissionError(13, "Permission denied", "/sys/class/infiniband")

    agent = Agent(core_v1, AgentSettings(node_name=NODE), scan=failing)
    with caplog.at_level(logging.INFO, logger="kube_rdma.agent"):
        assert [await agent.step() for _ in range(3)] == [30.0] * 3
    assert [r.getMessage() for r in caplog.records] == [
        "scan: failed, keeping what the node carries: "
        "[Errno 13] Permission denied: '/sys/class/infiniband'"
    ]
    assert fake_api.requests == []
