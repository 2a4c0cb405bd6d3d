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
- on ConnectX-8 with Data Direct, the function a NIC reaches GPU memory through, matched to the
  NIC by VPD (agent/data_direct.py): the NIC's GPU pairs are measured from that function.

sysfs changes under a running scan: a device is listed and gone by the time its ports are read
(a driver reload, a VF removed), a file cannot be read (EACCES, EIO from a wedged firmware) or
holds something half-written. Given a `problems` list, a scan leaves out what it cannot read (a
port, a device, a PCIe link) and appends one message for each, naming the file; without one
(`agent inspect`, `nccl-conf`) the first problem raises. A Data Direct function that cannot be
matched never fails a scan: its NIC pairs through its own function, and the warning goes to the
list, or to the log without one.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from agent.attributes import SysfsError as SysfsError
from agent.attributes import read_attribute, read_required
from agent.data_direct import data_direct_functions
from agent.gdr import gdr_paths
from agent.pci import PciFunction, find_gpus, pci_function
from agent.pci import Problems as Problems
from agent.pci import left_out as _left_out
from agent.pcie import pcie_level
from agent.vpd_keywords import VpdReader
from kube_rdma.core.topology import DataDirect, Gid, Gpu, Nic, Pair, Port, Topology

PROC = Path("/proc")
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
_EMPTY_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def _numbered(directory: Path | str) -> list[int]:
    """The numeric entries of `directory` (ports, GID indexes), in order; [] when absent."""
    if not os.path.isdir(directory):
        return []
    return sorted(int(entry) for entry in os.listdir(directory) if entry.isdigit())


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
    pci = pci_function(root, device_dir / "device", problems)
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


def scan(
    root: Path,
    proc_root: Path = PROC,
    problems: Problems | None = None,
    vpd: VpdReader | None = None,
) -> Topology:
    """The node topology as sysfs under `root` describes it (and /proc, for the GPUDirect RDMA
    paths); with `problems`, what it could read, and there what it could not. `vpd` reads the
    VPDs Data Direct matching needs (sysfs alone by default)."""
    gpus = find_gpus(root, problems)
    devices = find_rdma_devices(root, problems)
    functions = {d.nic.name: d.pci for d in devices if d.pci}
    dma = data_direct_functions(root, functions, problems, vpd)
    pairs = [
        Pair(gpu=index, nic=d.nic.name, level=pcie_level(g.path, g.numa, f.path, f.numa))
        for index, g in enumerate(gpus)
        for d in devices
        if (f := dma.get(d.nic.name, d.pci)) is not None
    ]
    nics = [
        d.nic.model_copy(
            update={"data_direct": DataDirect(pci=f.address, numa=f.numa, pcie=f.link)}
        )
        if (f := dma.get(d.nic.name))
        else d.nic
        for d in devices
    ]
    return Topology(
        gpus=tuple(
            Gpu(index=i, pci=g.address, numa=g.numa, pcie=g.link) for i, g in enumerate(gpus)
        ),
        nics=tuple(nics),
        pairs=tuple(pairs),
        source="sysfs",
        gdr=gdr_paths(root, proc_root),
    )
