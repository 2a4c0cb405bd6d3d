"""ConnectX-8 Data Direct: GPUs pair with a NIC through the function its DMA goes through.

The fixture is a GB300-like tray (testbed/builders/gb300_tree.py): GPU i's Data Direct function
belongs to the NIC mlx5_k, k = (1, 0, 3, 2)[i], so neither the GPUs' order nor the NICs' own
PCI functions tell the pairing; only the VPDs do."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import pytest

from agent.sysfs import scan
from agent.vpd_keywords import unreadable_message
from kube_rdma.core.topology import decode, encode
from testbed.builders import gb300_tree
from testbed.builders.sysfs_tree import GEN5_X16, MELLANOX, NIC_CLASS, SysfsTree, vpd_image

NO_PROC = Path("/nonexistent/proc")
FALLBACK = "its NIC pairs with GPUs through the NIC's own function"
WITHOUT_DATA_DIRECT = {
    0: ["NODE", "NODE", "SYS", "SYS"],
    1: ["NODE", "NODE", "SYS", "SYS"],
    2: ["SYS", "SYS", "NODE", "NODE"],
    3: ["SYS", "SYS", "NODE", "NODE"],
}


def levels(root: Path, problems: list[str] | None = None) -> dict[int, list[str]]:
    """Each GPU's levels to mlx5_0 .. mlx5_3."""
    topology = scan(root, NO_PROC, [] if problems is None else problems)
    matrix: dict[int, list[str]] = {}
    for pair in topology.pairs:
        assert pair.nic == f"mlx5_{len(matrix.get(pair.gpu, []))}"
        matrix.setdefault(pair.gpu, []).append(pair.level.value)
    return matrix


def test_every_gpu_pairs_with_the_nic_its_data_direct_function_serves(tmp_path: Path) -> None:
    gb300_tree.gb300_node(tmp_path)
    problems: list[str] = []
    assert levels(tmp_path, problems) == {
        0: ["NODE", "PXB", "SYS", "SYS"],
        1: ["PXB", "NODE", "SYS", "SYS"],
        2: ["SYS", "SYS", "NODE", "PXB"],
        3: ["SYS", "SYS", "PXB", "NODE"],
    }
    assert problems == []
    topology = scan(tmp_path, NO_PROC)
    assert [g.pci for g in topology.gpus] == [
        "0008:06:00.0",
        "0009:06:00.0",
        "0018:06:00.0",
        "0019:06:00.0",
    ]
    assert [
        n.model_dump(
            mode="json",
            by_alias=True,
            exclude_none=True,
            include={"name", "pci", "numa", "data_direct"},
        )
        for n in topology.nics
    ] == [
        {"name": "mlx5_0", "pci": "0000:01:00.0", "numa": 0,
         "dataDirect": {"pci": "0009:03:00.0", "numa": 0}},
        {"name": "mlx5_1", "pci": "0002:01:00.0", "numa": 0,
         "dataDirect": {"pci": "0008:03:00.0", "numa": 0}},
        {"name": "mlx5_2", "pci": "0010:01:00.0", "numa": 1,
         "dataDirect": {"pci": "0019:03:00.0", "numa": 1}},
        {"name": "mlx5_3", "pci": "0012:01:00.0", "numa": 1,
         "dataDirect": {"pci": "0018:03:00.0", "numa": 1}},
    ]  # fmt: skip


def test_the_published_document_names_the_data_direct_function(tmp_path: Path) -> None:
    gb300_tree.gb300_node(tmp_path)
    text = encode(scan(tmp_path, NO_PROC))
    assert text.startswith('{"version":1,"minor":2,')
    assert '"name":"mlx5_1","pci":"0002:01:00.0","numa":0,"ports":[' in text
    assert '"dataDirect":{"pci":"0008:03:00.0","numa":0}}' in text
    assert '{"gpu":0,"nic":"mlx5_1","level":"PXB"}' in text


def test_the_data_direct_functions_link_is_published_and_read_back(tmp_path: Path) -> None:
    """GPU memory traffic crosses the Data Direct function's link, not the NIC's own."""
    tree = gb300_tree.gb300_node(tmp_path)
    tree.link("0008:02:00.0", GEN5_X16)
    tree.link("0008:03:00.0", GEN5_X16.trained(width=8))
    topology = scan(tmp_path, NO_PROC)
    text = encode(topology)
    assert (
        '"dataDirect":{"pci":"0008:03:00.0","numa":0,'
        '"pcie":{"speedGTs":32.0,"width":8,"maxSpeedGTs":32.0,"maxWidth":16}}}'
    ) in text
    nic = decode(text).nics[1]
    assert nic.data_direct is not None
    assert nic.data_direct.pcie is not None
    assert nic.data_direct.pcie.degraded
    assert decode(text) == topology


def test_the_same_tray_without_data_direct_pairs_as_before(tmp_path: Path) -> None:
    gb300_tree.gb300_node(tmp_path, data_direct=False)
    assert levels(tmp_path) == WITHOUT_DATA_DIRECT
    assert [n.data_direct for n in scan(tmp_path, NO_PROC).nics] == [None] * 4


def test_gpu_order_and_nic_order_agreeing_pair_straight(tmp_path: Path) -> None:
    gb300_tree.gb300_node(tmp_path, adapters=(0, 1, 2, 3))
    assert levels(tmp_path) == {
        0: ["PXB", "NODE", "SYS", "SYS"],
        1: ["NODE", "PXB", "SYS", "SYS"],
        2: ["SYS", "SYS", "PXB", "NODE"],
        3: ["SYS", "SYS", "NODE", "PXB"],
    }


def test_both_functions_of_a_two_port_adapter_go_through_its_data_direct_function(
    tmp_path: Path,
) -> None:
    """The kernel binds every RDMA device whose VUID matches (mlx5_data_direct_dev_reg walks
    all registrations); all functions of one adapter carry its V3."""
    tree = gb300_tree.gb300_node(tmp_path)
    port = tree.bridge(tree.host_bridge("0001:00"), "0001:00:00.0", 0)
    second = tree.nic(port, "0001:01:00.0", 0, {"enP1p1s0np0": 0}, device=gb300_tree.CONNECTX_8)
    tree.vpd("0001:01:00.0", vpd_image("x", gb300_tree.adapter_vpd(1, "S0D0F1")))
    tree.rdma("mlx5_4", second, {})
    topology = scan(tmp_path, NO_PROC)
    assert [(n.name, n.data_direct and n.data_direct.pci) for n in topology.nics] == [
        ("mlx5_0", "0009:03:00.0"),
        ("mlx5_1", "0008:03:00.0"),
        ("mlx5_2", "0019:03:00.0"),
        ("mlx5_3", "0018:03:00.0"),
        ("mlx5_4", "0008:03:00.0"),
    ]
    assert [p.level.value for p in topology.pairs if p.gpu == 0] == [
        "NODE", "PXB", "SYS", "SYS", "PXB"
    ]  # fmt: skip


def break_vpd(tree: SysfsTree, bdf: str, image: bytes | None) -> Path:
    """Replace the VPD of `bdf`; None makes it unreadable."""
    path = tree.root / "bus/pci/devices" / bdf / "vpd"
    if image is None:
        SysfsTree.unreadable(path)
    else:
        path.write_bytes(image)
    return path


def keywords_without(name: str) -> list[tuple[str, str]]:
    return [(k, v) for k, v in gb300_tree.adapter_vpd(1, "S1D0F0") if k != name]


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        (None, "cannot read {vpd}: Is a directory"),
        (b"\xff" * 64, "{vpd}: no read-only section (large resource tag 0x90)"),
        (
            b"\x90\x08\x00V3\x20abcd",
            "{vpd}: keyword 'V3' runs past the end of the read-only section",
        ),
        (
            vpd_image("x", keywords_without("VU")),
            "its VPD has no VU keyword, so the mlx5 driver does not use it",
        ),
        (vpd_image("x", keywords_without("V3")), "its VPD has no V3 keyword to find its NIC by"),
        (
            vpd_image("x", [("VU", "X"), ("V3", "00000000000000000000000000000000")]),
            "no NIC's VPD carries its V3 '00000000000000000000000000000000'",
        ),
    ],
    ids=["unreadable", "garbage", "cut short", "no VU", "no V3", "names no NIC"],
)
def test_a_data_direct_function_that_cannot_be_matched_leaves_its_nic_on_its_own_function(
    tmp_path: Path, image: bytes | None, reason: str
) -> None:
    tree = gb300_tree.gb300_node(tmp_path)
    vpd = break_vpd(tree, "0008:03:00.0", image)  # GPU 0's, mlx5_1's
    problems: list[str] = []
    assert levels(tmp_path, problems) == {
        0: ["NODE", "NODE", "SYS", "SYS"],
        1: ["PXB", "NODE", "SYS", "SYS"],
        2: ["SYS", "SYS", "NODE", "PXB"],
        3: ["SYS", "SYS", "PXB", "NODE"],
    }
    assert problems == [
        f"0008:03:00.0 (ConnectX-8 Data Direct): {reason.format(vpd=vpd)}; {FALLBACK}"
    ]


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        (None, "cannot read {vpd}: Is a directory"),
        (b"\x00" * 16, "{vpd}: no read-only section (large resource tag 0x90)"),
    ],
    ids=["unreadable", "garbage"],
)
def test_a_nic_whose_vpd_cannot_be_read_keeps_its_own_function(
    tmp_path: Path, image: bytes | None, reason: str
) -> None:
    tree = gb300_tree.gb300_node(tmp_path)
    vpd = break_vpd(tree, "0002:01:00.0", image)  # mlx5_1's own
    problems: list[str] = []
    assert levels(tmp_path, problems)[0] == ["NODE", "NODE", "SYS", "SYS"]
    assert problems == [
        f"mlx5_1: {reason.format(vpd=vpd)}; no Data Direct function can be matched to it",
        "0008:03:00.0 (ConnectX-8 Data Direct): no NIC's VPD carries its V3 "
        f"'{gb300_tree.adapter_uuid(1)}'; {FALLBACK}",
    ]


def test_a_nic_without_a_vpd_is_no_candidate_and_no_problem(tmp_path: Path) -> None:
    """A function without a VPD capability has no `vpd` file (an SR-IOV VF, another vendor's
    NIC): it cannot be served, and saying so every scan would be noise."""
    tree = gb300_tree.gb300_node(tmp_path)
    port = tree.bridge(tree.host_bridge("0001:00"), "0001:00:00.0", 0)
    other = tree.nic(port, "0001:01:00.0", 0, {"enP1p1s0np0": 0})
    tree.rdma("mlx5_4", other, {})
    problems: list[str] = []
    topology = scan(tmp_path, NO_PROC, problems)
    assert problems == []
    assert [n.data_direct is not None for n in topology.nics] == [True] * 4 + [False]
    assert [p.level.value for p in topology.pairs if p.nic == "mlx5_4"] == [
        "NODE", "NODE", "SYS", "SYS"
    ]  # fmt: skip


def test_two_data_direct_functions_claiming_one_nic_leave_it_on_its_own(tmp_path: Path) -> None:
    tree = gb300_tree.gb300_node(tmp_path)
    break_vpd(tree, "0009:03:00.0", vpd_image("x", gb300_tree.adapter_vpd(1, "S1D0F0")))
    problems: list[str] = []
    assert levels(tmp_path, problems) == {
        0: ["NODE", "NODE", "SYS", "SYS"],
        1: ["NODE", "NODE", "SYS", "SYS"],
        2: ["SYS", "SYS", "NODE", "PXB"],
        3: ["SYS", "SYS", "PXB", "NODE"],
    }
    assert problems == [
        "mlx5_1: Data Direct functions 0008:03:00.0 and 0009:03:00.0 carry its adapter's V3; "
        "it pairs with GPUs through its own function"
    ]


def test_without_a_problem_list_the_warning_is_logged_and_the_scan_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`agent inspect` scans without a list: a Data Direct function it cannot match is no
    reason to fail, unlike a file the document cannot do without."""
    tree = gb300_tree.gb300_node(tmp_path)
    vpd = break_vpd(tree, "0008:03:00.0", None)
    with caplog.at_level(logging.WARNING, logger="kube_rdma.agent"):
        topology = scan(tmp_path, NO_PROC)
    assert [p.level.value for p in topology.pairs if p.gpu == 0] == ["NODE", "NODE", "SYS", "SYS"]
    assert [r.getMessage() for r in caplog.records] == [
        f"scan: 0008:03:00.0 (ConnectX-8 Data Direct): cannot read {vpd}: Is a directory; "
        f"{FALLBACK}"
    ]


def test_a_function_that_is_no_data_direct_function_is_not_read(tmp_path: Path) -> None:
    """Detection goes by PCI ID: a Mellanox function with another device ID is never taken
    for one, whatever its VPD says."""
    tree = gb300_tree.gb300_node(tmp_path, data_direct=False)
    port = tree.bridge(tree.host_bridge("0030:00"), "0030:00:00.0", 0)
    tree.function(port, "0030:01:00.0", MELLANOX, NIC_CLASS, 0, "0x2101")
    tree.vpd("0030:01:00.0", vpd_image("x", gb300_tree.adapter_vpd(1, "S1D0F0")))
    assert levels(tmp_path) == WITHOUT_DATA_DIRECT


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            errno.EACCES,
            "cannot read /sys/vpd: Permission denied (VPD files are root's: run `kube-rdma "
            "agent read-vpd` as user 0 in an init container and give the agent its file with "
            "--vpd-file (manifests/agent/daemonset.yaml does), or run the agent as root; "
            "docs/agent.md)",
        ),
        (errno.EIO, "cannot read /sys/vpd: Input/output error"),
    ],
)
def test_an_unreadable_vpd_says_why(code: int, message: str) -> None:
    error = OSError(code, os.strerror(code))
    assert unreadable_message(Path("/sys/vpd"), error) == message
