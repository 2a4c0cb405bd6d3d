"""A PCI function's link as trained, against what it and its slot can do, from sysfs.

For PCI Express functions, the kernel (drivers/pci/pci-sysfs.c) writes:
- `current_link_speed` and `max_link_speed`: `32.0 GT/s PCIe`, `16.0 GT/s PCIe`, `2.5 GT/s PCIe`
  (older kernels `8 GT/s`, `5 GT/s`), and `Unknown` (older kernels `Unknown speed`) when the
  function has no link of its own: an SR-IOV virtual function, whose link registers are reserved.
- `current_link_width` and `max_link_width`: the lane count, 0 without a link.
Functions that are not PCI Express have none of these files.

The maximum is the lower of the function's and its slot's (the root or downstream port right
above it): a PCIe 5 NIC in a PCIe 4 slot runs at 16 GT/s by design, not because its link trained
down. A link below that maximum is a fault (a riser, a dirty connector) that halves bandwidth
without any error.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent.attributes import SysfsError, read_attribute
from kube_rdma.core.topology import PcieLink

_SPEED = re.compile(r"^(\d+(?:\.\d+)?) GT/s(?: PCIe)?$")
_NO_LINK = ("Unknown", "Unknown speed")


def pcie_link(function_dir: Path, slot_dir: Path | None) -> PcieLink | None:
    """The link of the function at `function_dir`, below the port at `slot_dir` (None under a
    host bridge); None when it has no link or the kernel does not say."""
    speed = _speed(function_dir / "current_link_speed")
    width = _width(function_dir / "current_link_width")
    max_speed = _speed(function_dir / "max_link_speed")
    max_width = _width(function_dir / "max_link_width")
    if speed is None or width is None or max_speed is None or max_width is None:
        return None
    if slot_dir is not None:
        max_speed = min(max_speed, _speed(slot_dir / "max_link_speed") or max_speed)
        max_width = min(max_width, _width(slot_dir / "max_link_width") or max_width)
    return PcieLink(speed_gts=speed, width=width, max_speed_gts=max_speed, max_width=max_width)


def _speed(path: Path) -> float | None:
    """`32.0 GT/s PCIe` -> 32.0; None when absent or unknown."""
    value = read_attribute(path)
    if value is None or value in _NO_LINK:
        return None
    match = _SPEED.match(value)
    if match is None:
        raise SysfsError(f"{path}: expected a speed like '32.0 GT/s PCIe', got {value!r}")
    return float(match.group(1))


def _width(path: Path) -> int | None:
    """`16` -> 16; None when absent or 0 (no link)."""
    value = read_attribute(path)
    if value is None:
        return None
    if not value.isdigit():
        raise SysfsError(f"{path}: expected a lane count like '16', got {value!r}")
    return int(value) or None
