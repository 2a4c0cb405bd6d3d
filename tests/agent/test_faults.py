"""Scans of sysfs trees that break under the agent: unreadable or half-written files, devices
gone between listing and reading. With a problems list a scan keeps what it could read and
names what it left out; without one (inspect, nccl-conf) the first problem raises."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.sysfs import SysfsError, scan
from testbed.builders import sysfs_tree

NO_PROC = Path("/nonexistent/proc")
IB = "class/infiniband/mlx4_0"


def unreadable(relative: str) -> Callable[[Path], None]:
    return lambda root: sysfs_tree.SysfsTree.unreadable(root / relative)


def written(relative: str, text: str) -> Callable[[Path], object]:
    return lambda root: (root / relative).write_text(text)


def garbage_entries(root: Path) -> None:
    (root / IB / "ports/power").mkdir()
    (root / IB / "ports/1/gids/x").write_text("fe80::1\n")


def emptied(relative: str) -> Callable[[Path], None]:
    def empty(root: Path) -> None:
        shutil.rmtree(root / relative)
        (root / relative).mkdir()

    return empty


# (what breaks, the ports scanned as (nic, port, state, healthy), the problems, {root} = tree)
CASES = {
    "unreadable link layer": (
        unreadable(f"{IB}/ports/1/link_layer"),
        [("mlx4_0", 2, "DOWN", False)],
        [f"mlx4_0 port 1: {{root}}/{IB}/ports/1/link_layer: cannot read: Is a directory"],
    ),
    "port gone: its files removed": (
        emptied(f"{IB}/ports/2"),
        [("mlx4_0", 1, "ACTIVE", True)],
        [
            f"mlx4_0 port 2: {{root}}/{IB}/ports/2/link_layer: cannot read: "
            "No such file or directory"
        ],
    ),
    "garbage rate": (
        written(f"{IB}/ports/1/rate", "\x00\x17fast\n"),
        [("mlx4_0", 2, "DOWN", False)],
        [
            f"mlx4_0 port 1: {{root}}/{IB}/ports/1/rate: expected a rate like "
            "'400 Gb/sec (4X NDR)', got '\\x00\\x17fast'"
        ],
    ),
    "half-written rate and state": (
        lambda root: [
            written(f"{IB}/ports/1/rate", "")(root),
            written(f"{IB}/ports/1/state", "4: ACT")(root),
        ],
        [("mlx4_0", 1, "ACT", False), ("mlx4_0", 2, "DOWN", False)],
        [],
    ),
    "unreadable state": (
        unreadable(f"{IB}/ports/1/state"),
        [("mlx4_0", 1, "UNKNOWN", False), ("mlx4_0", 2, "DOWN", False)],
        [],
    ),
    "garbage entries next to ports and GIDs": (
        garbage_entries,
        [("mlx4_0", 1, "ACTIVE", True), ("mlx4_0", 2, "DOWN", False)],
        [],
    ),
    "device gone after the listing": (
        lambda root: sysfs_tree.SysfsTree(root).vanish("mlx4_0"),
        [],
        [f"mlx4_0: {{root}}/{IB}: gone while the node was scanned"],
    ),
}


@pytest.mark.parametrize(("breaks", "ports", "problems"), CASES.values(), ids=CASES.keys())
def test_a_scan_keeps_what_it_could_read(
    tmp_path: Path,
    breaks: Callable[[Path], object],
    ports: list[tuple[str, int, str, bool]],
    problems: list[str],
) -> None:
    sysfs_tree.dual_port_ib_node(tmp_path)
    breaks(tmp_path)
    found: list[str] = []
    topology = scan(tmp_path, NO_PROC, found)
    scanned = [(n.name, p.port, p.state, p.healthy) for n in topology.nics for p in n.ports]
    assert scanned == ports
    assert found == [p.format(root=tmp_path) for p in problems]


def test_without_a_list_the_first_problem_raises(tmp_path: Path) -> None:
    sysfs_tree.dual_port_ib_node(tmp_path)
    sysfs_tree.SysfsTree.unreadable(tmp_path / IB / "ports/1/link_layer")
    with pytest.raises(SysfsError) as error:
        scan(tmp_path, NO_PROC)
    assert str(error.value) == f"{tmp_path}/{IB}/ports/1/link_layer: cannot read: Is a directory"


def test_a_vanished_rail_leaves_the_others_and_their_pairs(tmp_path: Path) -> None:
    tree = sysfs_tree.hgx_8gpu_8nic(tmp_path)
    tree.vanish("mlx5_3")
    found: list[str] = []
    topology = scan(tmp_path, NO_PROC, found)
    assert [n.name for n in topology.nics] == [f"mlx5_{i}" for i in (0, 1, 2, 4, 5, 6, 7)]
    assert len(topology.gpus) == 8
    assert {p.nic for p in topology.pairs} == {n.name for n in topology.nics}
    assert found == [f"mlx5_3: {tmp_path}/class/infiniband/mlx5_3: gone while the node was scanned"]


def test_a_garbage_pcie_link_is_left_out_and_the_device_kept(tmp_path: Path) -> None:
    sysfs_tree.trained_down_hgx_node(tmp_path)
    speed = tmp_path / "bus/pci/devices/0000:4b:00.0/current_link_speed"
    speed.write_text("32.0 GT/")  # half-written
    found: list[str] = []
    topology = scan(tmp_path, NO_PROC, found)
    assert [n.pcie is None for n in topology.nics] == [False, False, True, *[False] * 5]
    assert topology.nics[2].ports[0].healthy
    assert found == [
        f"the PCIe link of 0000:4b:00.0: {speed.resolve()}: "
        "expected a speed like '32.0 GT/s PCIe', got '32.0 GT/'"
    ]
