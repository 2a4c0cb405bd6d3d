"""VPD parsing by the layout of the PCI specification, as drivers/pci/vpd.c walks it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.vpd import VpdError, read_only_keywords, read_vpd
from testbed.builders.sysfs_tree import vpd_image

# The read-only section of a ConnectX-7 (lspci -vv in the kernel's mailing list thread for
# "net/mlx5: Enable unprivileged read of PCI VPD file"), serial number padded as cards pad it.
CONNECTX_7 = [
    ("PN", "MCX713106AEHEA_QP1"),
    ("EC", "A5"),
    ("V2", "MCX713106AEHEA_QP1"),
    ("SN", "MT2314XZ0JUZ   "),
    ("V3", "0a5efb8958deed118000946dae7db798"),
    ("VA", "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX713106A"),
    ("V0", "PCIeGen5 x16"),
    ("VU", "MT2314XZ0JUZMLNXS0D0F0"),
]


def test_read_only_keywords_of_a_connectx_card() -> None:
    image = vpd_image("NVIDIA ConnectX-7 HHHL adapter Card", CONNECTX_7)
    assert sum(image[: image.index(b"RV") + 4]) % 256 == 0, "RV's checksum byte is right"
    assert read_only_keywords(image) == {
        "PN": "MCX713106AEHEA_QP1",
        "EC": "A5",
        "V2": "MCX713106AEHEA_QP1",
        "SN": "MT2314XZ0JUZ",
        "V3": "0a5efb8958deed118000946dae7db798",
        "VA": "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX713106A",
        "V0": "PCIeGen5 x16",
        "VU": "MT2314XZ0JUZMLNXS0D0F0",
    }


def test_a_read_only_section_first_and_a_write_section_after_it() -> None:
    read_only = b"SN\x04AB12RV\x01\x00"
    writable = b"V1\x03abcRW\x02\x00\x00"
    image = (
        bytes([0x90, len(read_only), 0])
        + read_only
        + bytes([0x91, len(writable), 0])
        + writable
        + b"\x78"
    )
    assert read_only_keywords(image) == {"SN": "AB12"}


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (b"", "empty"),
        (b"\xff\xff\xff\xff", "no read-only section (large resource tag 0x90)"),
        (b"\x82\x03\x00abc\x78", "no read-only section (large resource tag 0x90)"),
        (b"\x90\x06\x00SN\x09AB1", "keyword 'SN' runs past the end of the read-only section"),
    ],
    ids=["empty", "erased EEPROM", "name only", "cut short"],
)
def test_bad_vpd_says_what_is_wrong(image: bytes, message: str) -> None:
    with pytest.raises(VpdError) as error:
        read_only_keywords(image)
    assert str(error.value) == message


def test_read_vpd_reads_the_whole_file(tmp_path: Path) -> None:
    image = vpd_image("x" * 5000, CONNECTX_7)
    (tmp_path / "vpd").write_bytes(image)
    assert read_vpd(tmp_path / "vpd") == image
