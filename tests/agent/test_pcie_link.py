"""PCIe links as the kernel writes them, from PCIe 1 to 6 and old kernels to new: exact links,
no link where the function has none, and errors that name the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.attributes import SysfsError
from agent.pcie_link import pcie_link
from kube_rdma.core.topology import PcieLink


def function(path: Path, speed: str, width: str, max_speed: str, max_width: str) -> Path:
    path.mkdir(parents=True)
    files = {
        "current_link_speed": speed,
        "current_link_width": width,
        "max_link_speed": max_speed,
        "max_link_width": max_width,
    }
    for name, value in files.items():
        (path / name).write_text(value + "\n")
    return path


GEN5 = "32.0 GT/s PCIe"


def link(speed: float, width: int, max_speed: float, max_width: int) -> PcieLink:
    return PcieLink(speed_gts=speed, width=width, max_speed_gts=max_speed, max_width=max_width)


# (case, current speed, current width, max speed, max width, the link)
CASES: list[tuple[str, str, str, str, str, PcieLink | None]] = [
    ("gen5-x16", GEN5, "16", GEN5, "16", link(32, 16, 32, 16)),
    ("x8-of-x16", GEN5, "8", GEN5, "16", link(32, 8, 32, 16)),
    ("gen4-of-gen5", "16.0 GT/s PCIe", "16", GEN5, "16", link(16, 16, 32, 16)),
    ("gen1-idle", "2.5 GT/s PCIe", "16", "16.0 GT/s PCIe", "16", link(2.5, 16, 16, 16)),
    ("gen6", "64.0 GT/s PCIe", "16", "64.0 GT/s PCIe", "16", link(64, 16, 64, 16)),
    ("old-kernel", "8 GT/s", "8", "8 GT/s", "8", link(8, 8, 8, 8)),
    ("old-kernel-2.5", "2.5 GT/s", "1", "5 GT/s", "1", link(2.5, 1, 5, 1)),
    ("virtual-function", "Unknown", "0", "Unknown", "0", None),
    ("virtual-function-old-kernel", "Unknown speed", "0", "Unknown speed", "0", None),
    ("link-down", GEN5, "0", GEN5, "16", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("speed", "width", "max_speed", "max_width", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_links_as_the_kernel_writes_them(
    tmp_path: Path, speed: str, width: str, max_speed: str, max_width: str, expected: PcieLink
) -> None:
    assert pcie_link(function(tmp_path / "f", speed, width, max_speed, max_width), None) == expected


def test_a_function_without_link_files_has_no_link(tmp_path: Path) -> None:
    (tmp_path / "f").mkdir()
    assert pcie_link(tmp_path / "f", None) is None


def test_the_slot_caps_the_maximum(tmp_path: Path) -> None:
    slot = function(tmp_path / "port", "16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "8")
    device = function(slot / "device", "16.0 GT/s PCIe", "8", GEN5, "16")
    found = pcie_link(device, slot)
    assert found == link(16, 8, 16, 8)
    assert found is not None
    assert not found.degraded


def test_a_slot_without_link_files_caps_nothing(tmp_path: Path) -> None:
    (tmp_path / "port").mkdir()
    device = function(tmp_path / "port" / "device", "16.0 GT/s PCIe", "16", GEN5, "16")
    found = pcie_link(device, tmp_path / "port")
    assert found == link(16, 16, 32, 16)
    assert found is not None
    assert found.degraded


@pytest.mark.parametrize(
    ("name", "speed", "width", "message"),
    [
        ("current_link_speed", "fast", "16", "expected a speed like '32.0 GT/s PCIe', got 'fast'"),
        ("current_link_width", GEN5, "x16", "expected a lane count like '16', got 'x16'"),
    ],
)
def test_what_cannot_be_read_names_the_file(
    tmp_path: Path, name: str, speed: str, width: str, message: str
) -> None:
    path = function(tmp_path / "f", speed, width, GEN5, "16")
    with pytest.raises(SysfsError) as error:
        pcie_link(path, None)
    assert str(error.value) == f"{path / name}: {message}"
