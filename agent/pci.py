"""PCI functions from sysfs: NVIDIA GPUs, and the function an RDMA device sits on.

`bus/pci/devices/<BDF>` links to the function's real directory under `devices/`, whose path is
its bridge chain (host bridge first: what agent/pcie.py measures levels by); the function's
`vendor`, `class` and `numa_node` files and its PCIe link (agent/pcie_link.py) are read there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from agent.attributes import SysfsError, read_attribute
from agent.pcie_link import pcie_link
from kube_rdma.core.topology import PcieLink

NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0302", "0x0300")  # 3D controller, VGA controller
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")

Problems = list[str]
"""What a scan left out and why, one message each."""


def left_out(problems: Problems | None, what: str, error: SysfsError | OSError) -> None:
    """Note that `what` was left out because of `error`; without a list, raise it."""
    if problems is None:
        raise error
    if isinstance(error, OSError):
        problems.append(f"{what}: {error.filename}: {error.strerror}")
    else:
        problems.append(f"{what}: {error}")


@dataclass(frozen=True)
class PciFunction:
    address: str
    path: tuple[str, ...]
    """Components of the real path below <root>/devices, host bridge first."""
    numa: int | None
    link: PcieLink | None


def _numa(path: Path) -> int | None:
    value = read_attribute(path)
    if value is None or value.lstrip("-").isdigit() is False:
        return None
    number = int(value)
    return number if number >= 0 else None


def pci_function(
    root: Path, device_link: Path, problems: Problems | None = None
) -> PciFunction | None:
    real = Path(os.path.realpath(device_link))
    try:
        parts = real.relative_to(os.path.realpath(root / "devices")).parts
    except ValueError:
        return None
    if not parts or not _BDF.match(parts[-1]):
        return None
    slot = real.parent if _BDF.match(real.parent.name) else None
    try:
        link = pcie_link(real, slot)
    except SysfsError as e:
        left_out(problems, f"the PCIe link of {parts[-1]}", e)
        link = None
    return PciFunction(parts[-1], parts, _numa(real / "numa_node"), link)


def find_gpus(root: Path, problems: Problems | None = None) -> list[PciFunction]:
    """NVIDIA display and 3D controllers, in PCI bus id order (nvidia-smi's GPU index order)."""
    devices = root / "bus" / "pci" / "devices"
    found = []
    for entry in sorted(os.listdir(devices)) if devices.is_dir() else []:
        if read_attribute(devices / entry / "vendor") != NVIDIA_VENDOR:
            continue
        if not (read_attribute(devices / entry / "class") or "").startswith(GPU_CLASSES):
            continue
        function = pci_function(root, devices / entry, problems)
        if function is not None:
            found.append(function)
    return sorted(found, key=lambda f: f.address)
