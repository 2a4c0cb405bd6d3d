"""Discover a node's RDMA devices, NVIDIA GPUs and their PCIe relations from sysfs.

Everything is read from a configurable root (`/sys` on a node, a fixture tree in tests), through
the kernel ABI documented in `Documentation/ABI/stable/sysfs-class-infiniband` and the PCI
device tree:
- `class/infiniband/<dev>/device` links to the PCI function; `ports/<p>/{state, phys_state,
  rate, link_layer}`; `ports/<p>/gids/<i>` with `gid_attrs/types/<i>` and `gid_attrs/ndevs/<i>`
  (reading the type of an unused entry fails with EINVAL, which marks it empty);
  `ports/<p>/counters/*`.
- `bus/pci/devices/<BDF>/{vendor, class, numa_node}`; its real path under `devices/` is the
  bridge chain used for the PCIe level; its link (agent/pcie_link.py).
- `class/net/<netdev>/mtu` for a RoCE port's MTU (an InfiniBand port's MTU is not in sysfs: its
  netdev's is IPoIB's).
- the GPUDirect RDMA paths (agent/gdr.py), which also read /proc.

sysfs changes under a running scan: a device is listed and gone by the time its ports are read
(a driver reload, a VF removed), a file cannot be read (EACCES, EIO from a wedged firmware) or
holds something half-written. Given a `problems` list, a scan leaves out what it cannot read (a
port, a device, a PCIe link) and appends one message for each, naming the file; without one
(`agent inspect`, `nccl-conf`) the first problem raises.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from agent.attributes import SysfsError as SysfsError
from agent.attributes import read_attribute, read_required
from agent.gdr import gdr_paths
from agent.pcie import pcie_level
from agent.pcie_link import pcie_link
from kube_rdma.core.topology import Gid, Gpu, Nic, Pair, PcieLink, Port, Topology

PROC = Path("/proc")
NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0302", "0x0300")  # 3D controller, VGA controller
ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_xmit_discards",
)
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_EMPTY_GID = "0000:0000:0000:0000:0000:0000:0000:0000"

Problems = list[str]
"""What a scan left out and why, one message each."""


def _left_out(problems: Problems | None, what: str, error: SysfsError | OSError) -> None:
    """Note that `what` was left out because of `error`; without a list, raise it."""
    if problems is None:
        raise error
    if isinstance(error, OSError):
        problems.append(f"{what}: {error.filename}: {error.strerror}")
    else:
        problems.append(f"{what}: {error}")


def _numbered(directory: Path | str) -> list[int]:
    """The numeric entries of `directory` (ports, GID indexes), in order; [] when absent."""
    if not os.path.isdir(directory):
        return []
    return sorted(int(entry) for entry in os.listdir(directory) if entry.isdigit())


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


def _pci_function(
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
        _left_out(problems, f"the PCIe link of {parts[-1]}", e)
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
        function = _pci_function(root, devices / entry, problems)
        if function is not None:
            found.append(function)
    return sorted(found, key=lambda f: f.address)


def _state(path: Path) -> str | None:
    """`4: ACTIVE` -> `ACTIVE`."""
    value = read_attribute(path)
    return value.split(":", 1)[-1].strip() if value else None


def _rate(path: Path) -> float | None:
    """`400 Gb/sec (4X NDR)` -> 400.0."""
    value = read_attribute(path)
    if not value:
        return None
    try:
        return float(value.split()[0])
    except ValueError as e:
        raise SysfsError(
            f"{path}: expected a rate like '400 Gb/sec (4X NDR)', got {value!r}"
        ) from e


def _gid_ip(gid: str) -> str | None:
    try:
        address = ipaddress.IPv6Address(gid)
    except ValueError:
        return None
    mapped = address.ipv4_mapped
    return str(mapped) if mapped is not None else str(address)


def _gids(port_dir: Path, link_layer: str) -> list[Gid]:
    gids_dir = f"{port_dir}/gids"
    result = []
    for entry in _numbered(gids_dir):
        raw = read_attribute(f"{gids_dir}/{entry}")
        if not raw or raw == _EMPTY_GID:
            continue
        kind = read_attribute(f"{port_dir}/gid_attrs/types/{entry}")
        if kind is None:
            continue  # EINVAL: the entry is not in use
        netdev = read_attribute(f"{port_dir}/gid_attrs/ndevs/{entry}") or None
        if link_layer == "InfiniBand":
            result.append(Gid(index=int(entry), gid=_short(raw), type="IB", netdev=netdev))
            continue
        gid_type = "RoCE v2" if "v2" in kind else "RoCE v1"
        ip = _gid_ip(raw)
        result.append(Gid(index=int(entry), gid=_short(raw), type=gid_type, ip=ip, netdev=netdev))
    return result


def _short(gid: str) -> str:
    """The GID in IPv6 notation; IPv4-mapped ones as `::ffff:a.b.c.d`, as show_gids prints."""
    try:
        address = ipaddress.IPv6Address(gid)
    except ValueError:
        return gid
    return f"::ffff:{address.ipv4_mapped}" if address.ipv4_mapped else str(address)


def _port_netdev(device_dir: Path, port: int, gids: list[Gid]) -> str | None:
    for gid in gids:
        if gid.netdev:
            return gid.netdev
    net = device_dir / "device" / "net"
    if not net.is_dir():
        return None
    for name in sorted(os.listdir(net)):
        dev_port = read_attribute(net / name / "dev_port")
        if dev_port is not None and dev_port.isdigit() and int(dev_port) == port - 1:
            return name
    return None


def _counters(port_dir: Path) -> dict[str, int]:
    counters = {}
    for name in ERROR_COUNTERS:
        value = read_attribute(port_dir / "counters" / name)
        if value is not None and value.isdigit():
            counters[name] = int(value)
    return counters


def _mtu(root: Path, netdev: str | None) -> int | None:
    if netdev is None:
        return None
    path = root / "class" / "net" / netdev / "mtu"
    value = read_attribute(path)
    if value is None:
        return None
    if not value.isdigit():
        raise SysfsError(f"{path}: expected an MTU like '9000', got {value!r}")
    return int(value)


def _port(root: Path, device_dir: Path, number: int) -> Port:
    port_dir = device_dir / "ports" / str(number)
    link_layer = read_required(port_dir / "link_layer")
    if link_layer not in ("InfiniBand", "Ethernet"):
        raise SysfsError(
            f"{port_dir / 'link_layer'}: expected InfiniBand or Ethernet, got {link_layer!r}"
        )
    state = _state(port_dir / "state") or "UNKNOWN"
    phys_state = _state(port_dir / "phys_state")
    gids = _gids(port_dir, link_layer)
    netdev = _port_netdev(device_dir, number, gids)
    return Port(
        port=number,
        state=state,
        phys_state=phys_state,
        link_layer=link_layer,
        rate_gbps=_rate(port_dir / "rate"),
        netdev=netdev,
        healthy=state == "ACTIVE" and phys_state in (None, "LinkUp"),
        gids=tuple(gids),
        counters=_counters(port_dir),
        mtu=_mtu(root, netdev) if link_layer == "Ethernet" else None,
    )


@dataclass(frozen=True)
class RdmaDevice:
    nic: Nic
    pci: PciFunction | None


def find_rdma_devices(root: Path, problems: Problems | None = None) -> list[RdmaDevice]:
    base = root / "class" / "infiniband"
    devices = []
    for name in sorted(os.listdir(base)) if base.is_dir() else []:
        try:
            devices.append(_rdma_device(root, base / name, problems))
        except (SysfsError, OSError) as e:
            _left_out(problems, name, e)
    return devices


def _rdma_device(root: Path, device_dir: Path, problems: Problems | None) -> RdmaDevice:
    if not device_dir.exists():  # listed, then removed before it could be read
        raise SysfsError(f"{device_dir}: gone while the node was scanned")
    pci = _pci_function(root, device_dir / "device", problems)
    ports = []
    for number in _numbered(device_dir / "ports"):
        try:
            ports.append(_port(root, device_dir, number))
        except (SysfsError, OSError) as e:
            _left_out(problems, f"{device_dir.name} port {number}", e)
    nic = Nic(
        name=device_dir.name,
        pci=pci.address if pci else None,
        numa=pci.numa if pci else None,
        pcie=pci.link if pci else None,
        ports=tuple(ports),
    )
    return RdmaDevice(nic, pci)


def scan(root: Path, proc_root: Path = PROC, problems: Problems | None = None) -> Topology:
    """The node topology as sysfs under `root` describes it (and /proc, for the GPUDirect RDMA
    paths); with `problems`, what it could read, and there what it could not."""
    gpus = find_gpus(root, problems)
    devices = find_rdma_devices(root, problems)
    pairs = [
        Pair(gpu=index, nic=d.nic.name, level=pcie_level(g.path, g.numa, d.pci.path, d.pci.numa))
        for index, g in enumerate(gpus)
        for d in devices
        if d.pci is not None
    ]
    return Topology(
        gpus=tuple(
            Gpu(index=i, pci=g.address, numa=g.numa, pcie=g.link) for i, g in enumerate(gpus)
        ),
        nics=tuple(d.nic for d in devices),
        pairs=tuple(pairs),
        source="sysfs",
        gdr=gdr_paths(root, proc_root),
    )
