"""Discovery from fixture sysfs trees shaped like real servers: the exact documents.

Every scan here reads a fixture /proc or none (`NO_PROC`), never the test machine's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.sysfs import SysfsError, scan
from kube_rdma.core.objects import Json
from testbed.builders import sysfs_tree

ZERO = {"symbol_error": 0, "link_downed": 0}
NO_PROC = Path("/nonexistent/proc")
NO_GDR = {"peermem": False, "dmabuf": False}


def roce(netdev: str, link_local: str, ip: str) -> list[Json]:
    entries = []
    for index, (gid, address) in enumerate([(link_local, link_local), (f"::ffff:{ip}", ip)]):
        for offset, kind in enumerate(("RoCE v1", "RoCE v2")):
            entries.append(
                {
                    "index": 2 * index + offset,
                    "gid": gid,
                    "type": kind,
                    "ip": address,
                    "netdev": netdev,
                }
            )
    return entries


def port(netdev: str, gids: list[Json], rate: float = 400.0, **extra: Any) -> Json:
    return {
        "port": 1,
        "state": "ACTIVE",
        "physState": "LinkUp",
        "linkLayer": "Ethernet",
        "rateGbps": rate,
        "netdev": netdev,
        "healthy": True,
        "gids": gids,
        "counters": ZERO,
        "mtu": 9000,
        **extra,
    }


def document(root: Path, proc: Path = NO_PROC) -> Json:
    result: Json = scan(root, proc).model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


def test_hgx_node_pairs_every_gpu_with_its_switch_nic(tmp_path: Path) -> None:
    sysfs_tree.hgx_8gpu_8nic(tmp_path)
    doc = document(tmp_path)
    assert doc["gpus"] == [
        {"index": i, "pci": pci, "numa": 0 if i < 4 else 1}
        for i, pci in enumerate(
            [
                "0000:19:00.0",
                "0000:3b:00.0",
                "0000:4c:00.0",
                "0000:5d:00.0",
                "0000:9b:00.0",
                "0000:bb:00.0",
                "0000:cc:00.0",
                "0000:dd:00.0",
            ]
        )
    ]
    assert [n["name"] for n in doc["nics"]] == [f"mlx5_{i}" for i in range(8)]
    assert doc["nics"][0] == {
        "name": "mlx5_0",
        "pci": "0000:18:00.0",
        "numa": 0,
        "ports": [
            port("enp24s0np0", roce("enp24s0np0", "fe80::ac0:ebff:fe10:1000", "192.168.1.11"))
        ],
    }
    matrix = {(p["gpu"], p["nic"]): p["level"] for p in doc["pairs"]}
    assert len(doc["pairs"]) == 64
    for gpu in range(8):
        for nic in range(8):
            expected = "PIX" if gpu == nic else "NODE" if gpu // 4 == nic // 4 else "SYS"
            assert matrix[(gpu, f"mlx5_{nic}")] == expected, (gpu, nic)
    assert doc["source"] == "sysfs"


def test_port_down_is_unhealthy(tmp_path: Path) -> None:
    sysfs_tree.hgx_8gpu_8nic(tmp_path, down={3})
    nic = document(tmp_path)["nics"][3]
    assert nic["ports"] == [
        {
            "port": 1,
            "state": "DOWN",
            "physState": "Disabled",
            "linkLayer": "Ethernet",
            "rateGbps": 40.0,
            "netdev": "enp92s0np0",
            "healthy": False,
            "gids": [],
            "counters": ZERO,
            "mtu": 9000,
        }
    ]


def test_two_gpus_share_one_nic_and_deeper_switches_are_pxb(tmp_path: Path) -> None:
    sysfs_tree.shared_nic_node(tmp_path)
    doc = document(tmp_path)
    assert [g["pci"] for g in doc["gpus"]] == [
        "0000:03:00.0",
        "0000:04:00.0",
        "0000:08:00.0",
        "0000:0b:00.0",
    ]
    assert doc["pairs"] == [
        {"gpu": 0, "nic": "mlx5_0", "level": "PIX"},
        {"gpu": 0, "nic": "mlx5_1", "level": "PHB"},
        {"gpu": 1, "nic": "mlx5_0", "level": "PIX"},
        {"gpu": 1, "nic": "mlx5_1", "level": "PHB"},
        {"gpu": 2, "nic": "mlx5_0", "level": "PHB"},
        {"gpu": 2, "nic": "mlx5_1", "level": "PIX"},
        {"gpu": 3, "nic": "mlx5_0", "level": "PHB"},
        {"gpu": 3, "nic": "mlx5_1", "level": "PXB"},
    ]


def test_infiniband_dual_port_node(tmp_path: Path) -> None:
    sysfs_tree.dual_port_ib_node(tmp_path)
    assert document(tmp_path) == {
        "version": 1,
        "minor": 2,
        "gpus": [],
        "nics": [
            {
                "name": "mlx4_0",
                "pci": "0000:81:00.0",
                "numa": 1,
                "ports": [
                    {
                        "port": 1,
                        "state": "ACTIVE",
                        "physState": "LinkUp",
                        "linkLayer": "InfiniBand",
                        "rateGbps": 200.0,
                        "netdev": "ib0",
                        "healthy": True,
                        "gids": [{"index": 0, "gid": "fe80::2:c903:f1:2a41", "type": "IB"}],
                        "counters": {"symbol_error": 3, "link_downed": 0, "port_rcv_errors": 1},
                    },
                    {
                        "port": 2,
                        "state": "DOWN",
                        "physState": "Disabled",
                        "linkLayer": "InfiniBand",
                        "rateGbps": 10.0,
                        "netdev": "ib1",
                        "healthy": False,
                        "gids": [],
                        "counters": ZERO,
                    },
                ],
            }
        ],
        "pairs": [],
        "source": "sysfs",
        "gdr": NO_GDR,
    }


def test_bonded_roce_device_with_ipv6_and_unused_entries(tmp_path: Path) -> None:
    sysfs_tree.bonded_roce_node(tmp_path)
    ipv6 = "fd00:0:0:10::21"
    assert document(tmp_path) == {
        "version": 1,
        "minor": 2,
        "gpus": [{"index": 0, "pci": "0000:18:00.0", "numa": 0}],
        "nics": [
            {
                "name": "mlx5_bond_0",
                "pci": "0000:3b:00.0",
                "numa": 0,
                "ports": [
                    port(
                        "bond0",
                        [
                            *roce("bond0", "fe80::ac0:ebff:fe3b:3b00", "172.16.0.21"),
                            {
                                "index": 4,
                                "gid": ipv6,
                                "type": "RoCE v1",
                                "ip": ipv6,
                                "netdev": "bond0",
                            },
                            {
                                "index": 5,
                                "gid": ipv6,
                                "type": "RoCE v2",
                                "ip": ipv6,
                                "netdev": "bond0",
                            },
                        ],
                        rate=200.0,
                    )
                ],
            }
        ],
        "pairs": [{"gpu": 0, "nic": "mlx5_bond_0", "level": "NODE"}],
        "source": "sysfs",
        "gdr": NO_GDR,
    }


def test_empty_root_is_an_empty_document(tmp_path: Path) -> None:
    assert document(tmp_path) == {
        "version": 1,
        "minor": 2,
        "gpus": [],
        "nics": [],
        "pairs": [],
        "source": "sysfs",
        "gdr": NO_GDR,
    }


def test_unknown_link_layer_names_the_file(tmp_path: Path) -> None:
    tree = sysfs_tree.dual_port_ib_node(tmp_path)
    link_layer = tree.root / "class/infiniband/mlx4_0/ports/1/link_layer"
    link_layer.write_text("Omni-Path\n")
    with pytest.raises(SysfsError) as error:
        scan(tmp_path, NO_PROC)
    assert str(error.value) == f"{link_layer}: expected InfiniBand or Ethernet, got 'Omni-Path'"


def test_bad_rate_names_the_file(tmp_path: Path) -> None:
    sysfs_tree.dual_port_ib_node(tmp_path)
    rate = tmp_path / "class/infiniband/mlx4_0/ports/2/rate"
    rate.write_text("fast\n")
    with pytest.raises(SysfsError) as error:
        scan(tmp_path, NO_PROC)
    assert str(error.value) == f"{rate}: expected a rate like '400 Gb/sec (4X NDR)', got 'fast'"


def test_software_rdma_device_without_pci_has_no_pairs(tmp_path: Path) -> None:
    tree = sysfs_tree.bonded_roce_node(tmp_path)
    tree.rdma("rxe0", None, {1: sysfs_tree.PortSpec(rate="10 Gb/sec (1X QDR)", table_size=4)})
    doc = document(tmp_path)
    assert [n["name"] for n in doc["nics"]] == ["mlx5_bond_0", "rxe0"]
    assert doc["nics"][1]["name"] == "rxe0"
    assert "pci" not in doc["nics"][1]
    assert doc["pairs"] == [{"gpu": 0, "nic": "mlx5_bond_0", "level": "NODE"}]


def link(speed: float, width: int, max_speed: float = 32.0, max_width: int = 16) -> Json:
    return {"speedGTs": speed, "width": width, "maxSpeedGTs": max_speed, "maxWidth": max_width}


def test_links_that_trained_down_mtus_and_peermem(tmp_path: Path) -> None:
    sysfs_tree.trained_down_hgx_node(tmp_path)
    doc = document(tmp_path)
    gen5_x16 = link(32.0, 16)
    assert [(g["index"], g["pcie"]) for g in doc["gpus"]] == [
        *[(i, gen5_x16) for i in range(6)],
        (6, link(32.0, 8)),
        (7, link(16.0, 16, max_speed=16.0)),  # a PCIe 5 GPU in a PCIe 4 slot
    ]
    assert [(n["name"], n["pcie"], n["ports"][0]["mtu"]) for n in doc["nics"]] == [
        ("mlx5_0", gen5_x16, 9000),
        ("mlx5_1", gen5_x16, 9000),
        ("mlx5_2", link(32.0, 8), 9000),
        ("mlx5_3", gen5_x16, 9000),
        ("mlx5_4", gen5_x16, 1500),
        ("mlx5_5", link(16.0, 16), 9000),
        ("mlx5_6", gen5_x16, 9000),
        ("mlx5_7", gen5_x16, 9000),
    ]
    assert doc["nics"][2] == {
        "name": "mlx5_2",
        "pci": "0000:4b:00.0",
        "numa": 0,
        "pcie": link(32.0, 8),
        "ports": [
            port("enp75s0np0", roce("enp75s0np0", "fe80::ac0:ebff:fe10:1002", "192.168.3.11"))
        ],
    }
    assert doc["gdr"] == {"peermem": True, "dmabuf": False}
    topology = scan(tmp_path, NO_PROC)
    assert [n.pcie.degraded for n in topology.nics if n.pcie] == [
        False, False, True, False, False, True, False, False
    ]  # fmt: skip
    assert [g.pcie.degraded for g in topology.gpus if g.pcie] == [False] * 6 + [True, False]


def test_the_open_driver_on_a_new_kernel_offers_dmabuf(tmp_path: Path) -> None:
    sysfs_tree.bonded_roce_node(tmp_path / "sys")
    proc = sysfs_tree.driver_proc(tmp_path / "proc", sysfs_tree.OPEN_MODULE, "6.8.0-45-generic")
    assert document(tmp_path / "sys", proc)["gdr"] == {"peermem": False, "dmabuf": True}


def test_a_bad_mtu_names_the_file(tmp_path: Path) -> None:
    sysfs_tree.shared_nic_node(tmp_path).mtu("enp12s0np0", "jumbo")
    with pytest.raises(SysfsError) as error:
        scan(tmp_path, NO_PROC)
    assert str(error.value) == (
        f"{tmp_path}/class/net/enp12s0np0/mtu: expected an MTU like '9000', got 'jumbo'"
    )
