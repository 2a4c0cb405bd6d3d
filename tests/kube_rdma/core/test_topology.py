"""The topology document: encoding, the size budget, decoding, the PCIe level rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.pcie import pcie_level
from agent.sysfs import scan
from kube_rdma.core.topology import DocumentTooLarge, Level, decode, encode
from testbed.builders import sysfs_tree

HB0, HB1 = "pci0000:00", "pci0000:80"


@pytest.mark.parametrize(
    ("gpu", "nic", "numa", "level"),
    [
        # one switch: both two components below the switch's upstream port
        ((HB0, "rp", "usp", "dsp1", "gpu"), (HB0, "rp", "usp", "dsp2", "nic"), (0, 0), Level.PIX),
        # GPU one switch deeper
        (
            (HB0, "rp", "usp", "dsp1", "usp2", "dsp3", "gpu"),
            (HB0, "rp", "usp", "dsp2", "nic"),
            (0, 0),
            Level.PXB,
        ),
        # different root ports of one host bridge
        ((HB0, "rp1", "gpu"), (HB0, "rp2", "nic"), (0, 0), Level.PHB),
        # different host bridges, same NUMA node
        ((HB0, "rp", "gpu"), (HB1, "rp", "nic"), (0, 0), Level.NODE),
        # different NUMA nodes
        ((HB0, "rp", "gpu"), (HB1, "rp", "nic"), (0, 1), Level.SYS),
        # NUMA unknown: the conservative answer
        ((HB0, "rp", "gpu"), (HB1, "rp", "nic"), (None, None), Level.SYS),
    ],
)
def test_pcie_level(
    gpu: tuple[str, ...], nic: tuple[str, ...], numa: tuple[int | None, int | None], level: Level
) -> None:
    assert pcie_level(gpu, numa[0], nic, numa[1]) is level


def test_levels_rank_best_first() -> None:
    assert [lv.rank for lv in Level] == [0, 1, 2, 3, 4]


def test_encode_decode_round_trip(tmp_path: Path) -> None:
    sysfs_tree.hgx_8gpu_8nic(tmp_path)
    topology = scan(tmp_path)
    text = encode(topology)
    assert ", " not in text  # compact separators
    assert ": " not in text
    assert decode(text) == topology


def test_large_gid_tables_are_trimmed_to_fit(tmp_path: Path) -> None:
    sysfs_tree.hgx_8gpu_8nic(tmp_path)
    topology = scan(tmp_path)
    full = len(encode(topology))
    v2_only = decode(encode(topology, limit=full - 1))
    assert {g.type for n in v2_only.nics for p in n.ports for g in p.gids} == {"RoCE v2"}
    without = decode(encode(topology, limit=len(encode(v2_only)) - 1))
    assert all(p.gids == () for n in without.nics for p in n.ports)
    assert without.pairs == topology.pairs
    with pytest.raises(DocumentTooLarge, match="over the 100-byte budget"):
        encode(topology, limit=100)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        '{"version": 2}',
        '{"version": 1, "gpus": [{"index": -1}]}',
    ],
)
def test_decode_rejects_bad_documents(text: str) -> None:
    with pytest.raises(ValidationError):
        decode(text)


def test_a_newer_minor_version_and_unknown_fields_are_read() -> None:
    """An agent newer than the extender adds fields and bumps `minor`; its nodes must still read
    as RDMA nodes, with the fields this reader knows."""
    text = (
        '{"version": 1, "minor": 7, "futureField": {"x": 1}, "gpus": [{"index": 0, "new": 2}],'
        ' "nics": [{"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "linkLayer":'
        ' "Ethernet", "healthy": true, "fec": "RS"}]}]}'
    )
    topology = decode(text)
    assert topology.minor == 7
    assert topology.gpus[0].index == 0
    assert topology.nics[0].ports[0].healthy is True
