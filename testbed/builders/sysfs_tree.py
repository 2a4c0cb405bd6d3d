"""Build fixture sysfs trees shaped like real servers', for the node agent's tests and bench.

The layout follows the kernel: PCI functions live under /sys/devices/pciDDDD:BB/<bridges>/<BDF>
with vendor/class/numa_node files, /sys/bus/pci/devices/<BDF> links to them, and each RDMA device
is /sys/class/infiniband/<name> linking into its PCI function's `infiniband/` directory, with
`device` pointing back at the function. A NIC's network interfaces live in its function's `net/`
directory, linked from /sys/class/net. PCI Express functions carry their link attributes
(`current_link_speed`, ... as the kernel writes them); the builders below give them only where a
test is about links.

A function may carry its PCI device ID (`device`) and its Vital Product Data (`vpd`, the bytes
`vpd_image` lays out as the PCI specification and the kernel's drivers/pci/vpd.c read them);
testbed/builders/gb300_tree.py builds a ConnectX-8 Data Direct node with them.

`driver_proc` writes what the agent reads from /proc: the NVIDIA driver's version line and the
kernel release.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

MELLANOX = "0x15b3"
NVIDIA = "0x10de"
GPU_CLASS = "0x030200"
NIC_CLASS = "0x020700"  # InfiniBand controller; Ethernet ConnectX functions report 0x020000
BRIDGE_CLASS = "0x060400"

LINK_LOCAL_V1 = "IB/RoCE v1"
V2 = "RoCE v2"


@dataclass(frozen=True)
class Link:
    """A PCIe link as sysfs writes it: speeds like `32.0 GT/s PCIe`, widths in lanes."""

    speed: str
    width: int
    max_speed: str
    max_width: int

    def trained(self, speed: str | None = None, width: int | None = None) -> Link:
        """The same link trained below its maximum."""
        return Link(speed or self.speed, width or self.width, self.max_speed, self.max_width)


GEN5_X16 = Link("32.0 GT/s PCIe", 16, "32.0 GT/s PCIe", 16)
GEN4 = "16.0 GT/s PCIe"


@dataclass
class GidEntry:
    index: int
    gid: str
    type: str | None  # None: the type file cannot be read (an unused entry)
    netdev: str = ""


@dataclass
class PortSpec:
    state: str = "4: ACTIVE"
    phys_state: str = "5: LinkUp"
    rate: str = "400 Gb/sec (4X NDR)"
    link_layer: str = "Ethernet"
    gids: list[GidEntry] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    table_size: int = 255


VPD_ID_STRING = 0x82
VPD_READ_ONLY = 0x90
VPD_END = 0x78


def vpd_image(name: str, keywords: list[tuple[str, str]]) -> bytes:
    """A VPD as a ConnectX card's reads: the product name, then the read-only keywords in
    order, closed by `RV` whose first byte makes all bytes up to it sum to zero, then the end
    tag."""
    identifier = bytes([VPD_ID_STRING]) + len(name).to_bytes(2, "little") + name.encode()
    fields = b"".join(k.encode() + bytes([len(v)]) + v.encode() for k, v in keywords)
    fields += b"RV\x01"
    header = bytes([VPD_READ_ONLY]) + (len(fields) + 1).to_bytes(2, "little")
    checksum = -sum(identifier + header + fields) % 256
    return identifier + header + fields + bytes([checksum, VPD_END])


def mac_link_local(mac_tail: int) -> str:
    return f"fe80:0000:0000:0000:0ac0:ebff:fe{mac_tail >> 8 & 0xFF:02x}:{mac_tail & 0xFFFF:04x}"


def ipv4_gid(ip: str) -> str:
    a, b, c, d = (int(x) for x in ip.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"


def roce_gids(netdev: str, ip: str, mac_tail: int) -> list[GidEntry]:
    """A RoCE port's usual table: link-local v1/v2 at 0/1, the IPv4 address v1/v2 at 2/3."""
    return [
        GidEntry(0, mac_link_local(mac_tail), LINK_LOCAL_V1, netdev),
        GidEntry(1, mac_link_local(mac_tail), V2, netdev),
        GidEntry(2, ipv4_gid(ip), LINK_LOCAL_V1, netdev),
        GidEntry(3, ipv4_gid(ip), V2, netdev),
    ]


class SysfsTree:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
        (root / "class" / "infiniband").mkdir(parents=True, exist_ok=True)

    def host_bridge(self, domain_bus: str) -> Path:
        path = self.root / "devices" / f"pci{domain_bus}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def function(
        self,
        parent: Path,
        bdf: str,
        vendor: str,
        device_class: str,
        numa: int | None,
        device: str | None = None,
    ) -> Path:
        path = parent / bdf
        path.mkdir(parents=True)
        (path / "vendor").write_text(vendor + "\n")
        if device is not None:
            (path / "device").write_text(device + "\n")
        (path / "class").write_text(device_class + "\n")
        (path / "numa_node").write_text(f"{-1 if numa is None else numa}\n")
        link = self.root / "bus" / "pci" / "devices" / bdf
        link.symlink_to(os.path.relpath(path, link.parent))
        return path

    def link(self, bdf: str, link: Link) -> None:
        """Give the function at `bdf` (a device or a bridge's port) its PCIe link attributes."""
        path = self.root / "bus" / "pci" / "devices" / bdf
        (path / "current_link_speed").write_text(link.speed + "\n")
        (path / "current_link_width").write_text(f"{link.width}\n")
        (path / "max_link_speed").write_text(link.max_speed + "\n")
        (path / "max_link_width").write_text(f"{link.max_width}\n")

    def vpd(self, bdf: str, image: bytes) -> Path:
        """Give the function at `bdf` a VPD file holding `image`."""
        path = self.root / "bus" / "pci" / "devices" / bdf / "vpd"
        path.write_bytes(image)
        return path

    def mtu(self, netdev: str, mtu: int | str) -> None:
        (self.root / "class" / "net" / netdev / "mtu").write_text(f"{mtu}\n")

    def peermem(self) -> None:
        """nvidia_peermem loaded: its registration with the RDMA stack's peer memory API."""
        version = self.root / "kernel" / "mm" / "memory_peers" / "nv_mem" / "version"
        version.parent.mkdir(parents=True)
        version.write_text("1.3\n")

    def bridge(self, parent: Path, bdf: str, numa: int | None) -> Path:
        return self.function(parent, bdf, "0x1000", BRIDGE_CLASS, numa)

    def switch(
        self, root_port: Path, upstream: str, downstream: list[str], numa: int | None
    ) -> list[Path]:
        """A PCIe switch below `root_port`: its downstream ports."""
        usp = self.bridge(root_port, upstream, numa)
        return [self.bridge(usp, bdf, numa) for bdf in downstream]

    def gpu(self, parent: Path, bdf: str, numa: int | None) -> Path:
        return self.function(parent, bdf, NVIDIA, GPU_CLASS, numa)

    def nic(
        self,
        parent: Path,
        bdf: str,
        numa: int | None,
        netdevs: dict[str, int],
        mtu: int = 9000,
        device: str | None = None,
    ) -> Path:
        """A NIC PCI function; `netdevs` maps its network interfaces to their dev_port."""
        path = self.function(parent, bdf, MELLANOX, NIC_CLASS, numa, device)
        for name, dev_port in netdevs.items():
            (path / "net" / name).mkdir(parents=True)
            (path / "net" / name / "dev_port").write_text(f"{dev_port}\n")
            (path / "net" / name / "mtu").write_text(f"{mtu}\n")
            link = self.root / "class" / "net" / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(path / "net" / name, link.parent))
        return path

    def rdma(self, name: str, function: Path | None, ports: dict[int, PortSpec]) -> Path:
        if function is None:
            device = self.root / "devices" / "virtual" / "infiniband" / name
            device.mkdir(parents=True)
        else:
            device = function / "infiniband" / name
            device.mkdir(parents=True)
            (device / "device").symlink_to(os.path.relpath(function, device))
        for number, spec in ports.items():
            self._port(device / "ports" / str(number), spec)
        link = self.root / "class" / "infiniband" / name
        link.symlink_to(os.path.relpath(device, link.parent))
        return device

    def port_state(self, name: str, port: int, up: bool) -> None:
        """Set a port's link up (ACTIVE, LinkUp) or down (DOWN, Disabled), as a flap does."""
        path = self.root / "class" / "infiniband" / name / "ports" / str(port)
        (path / "state").write_text("4: ACTIVE\n" if up else "1: DOWN\n")
        (path / "phys_state").write_text("5: LinkUp\n" if up else "3: Disabled\n")

    @staticmethod
    def unreadable(path: Path) -> None:
        """Make the attribute at `path` fail to read, as one the kernel refuses (EACCES, EIO):
        a directory in its place fails the read with EISDIR, for root too, whom file modes do
        not stop."""
        path.unlink()
        path.mkdir()

    def vanish(self, name: str) -> None:
        """The RDMA device `name` gone between a scan's listing and its reads: its directory
        removed, its /sys/class/infiniband link left behind, dangling."""
        shutil.rmtree((self.root / "class" / "infiniband" / name).resolve())

    @staticmethod
    def _port(path: Path, spec: PortSpec) -> None:
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs", "counters"):
            (path / sub).mkdir(parents=True)
        (path / "state").write_text(spec.state + "\n")
        (path / "phys_state").write_text(spec.phys_state + "\n")
        (path / "rate").write_text(spec.rate + "\n")
        (path / "link_layer").write_text(spec.link_layer + "\n")
        used = {g.index: g for g in spec.gids}
        for index in range(spec.table_size):
            entry = used.get(index)
            gid = entry.gid if entry else "0000:0000:0000:0000:0000:0000:0000:0000"
            (path / "gids" / str(index)).write_text(gid + "\n")
            if entry and entry.type is not None:
                (path / "gid_attrs" / "types" / str(index)).write_text(entry.type + "\n")
                (path / "gid_attrs" / "ndevs" / str(index)).write_text(entry.netdev + "\n")
        for name, value in {"symbol_error": 0, "link_downed": 0, **spec.counters}.items():
            (path / "counters" / name).write_text(f"{value}\n")


# Two sockets, four root complexes each; every root complex holds one PCIe switch with one GPU
# and one 400G NIC (an HGX H100 board with a ConnectX-7 per GPU).
HGX_ROOTS = ["15", "37", "48", "59", "97", "b7", "c8", "d9"]


def hgx_8gpu_8nic(root: Path, down: set[int] | None = None) -> SysfsTree:
    tree = SysfsTree(root)
    for i, bus in enumerate(HGX_ROOTS):
        numa = 0 if i < 4 else 1
        b = int(bus, 16)
        host = tree.host_bridge(f"0000:{bus}")
        root_port = tree.bridge(host, f"0000:{bus}:01.0", numa)
        nic_port, gpu_port = tree.switch(
            root_port,
            f"0000:{b + 1:02x}:00.0",
            [f"0000:{b + 2:02x}:00.0", f"0000:{b + 2:02x}:01.0"],
            numa,
        )
        netdev = f"enp{b + 3}s0np0"
        nic = tree.nic(nic_port, f"0000:{b + 3:02x}:00.0", numa, {netdev: 0})
        tree.gpu(gpu_port, f"0000:{b + 4:02x}:00.0", numa)
        spec = PortSpec(gids=roce_gids(netdev, f"192.168.{i + 1}.11", 0x1000 + i))
        if down and i in down:
            spec = PortSpec(state="1: DOWN", phys_state="3: Disabled", rate="40 Gb/sec (4X QDR)")
        tree.rdma(f"mlx5_{i}", nic, {1: spec})
    return tree


def trained_down_hgx_node(root: Path) -> SysfsTree:
    """The HGX board with PCIe 5 x16 links everywhere but where they trained down: NIC 2 to x8,
    NIC 5 to 16 GT/s, GPU 6 to x8. GPU 7 sits in a PCIe 4 slot: 16 GT/s is all it can do there.
    Jumbo frames on every rail but NIC 4's, left at 1500; nvidia_peermem loaded."""
    tree = hgx_8gpu_8nic(root)
    gen4_x16 = Link(GEN4, 16, GEN4, 16)
    for i, bus in enumerate(int(b, 16) for b in HGX_ROOTS):
        tree.link(f"0000:{bus:02x}:01.0", GEN5_X16)
        tree.link(f"0000:{bus + 2:02x}:00.0", GEN5_X16)
        tree.link(f"0000:{bus + 2:02x}:01.0", gen4_x16 if i == 7 else GEN5_X16)
        nic = {2: GEN5_X16.trained(width=8), 5: GEN5_X16.trained(speed=GEN4)}.get(i, GEN5_X16)
        gpu = {6: GEN5_X16.trained(width=8), 7: GEN5_X16.trained(speed=GEN4)}.get(i, GEN5_X16)
        tree.link(f"0000:{bus + 3:02x}:00.0", nic)
        tree.link(f"0000:{bus + 4:02x}:00.0", gpu)
    tree.mtu(f"enp{int(HGX_ROOTS[4], 16) + 3}s0np0", 1500)
    tree.peermem()
    return tree


def shared_nic_node(root: Path) -> SysfsTree:
    """One socket, 4 GPUs, 2 NICs: GPU0 and GPU1 share NIC0's switch; GPU2 shares NIC1's
    switch; GPU3 sits one switch further down (PXB to NIC1)."""
    tree = SysfsTree(root)
    host = tree.host_bridge("0000:00")
    port_a = tree.bridge(host, "0000:00:01.0", 0)
    gpu0, gpu1, nic0 = tree.switch(
        port_a, "0000:01:00.0", ["0000:02:00.0", "0000:02:01.0", "0000:02:02.0"], 0
    )
    tree.gpu(gpu0, "0000:03:00.0", 0)
    tree.gpu(gpu1, "0000:04:00.0", 0)
    nic = tree.nic(nic0, "0000:05:00.0", 0, {"enp5s0np0": 0})
    tree.rdma("mlx5_0", nic, {1: PortSpec(gids=roce_gids("enp5s0np0", "10.10.0.5", 0x0500))})
    port_b = tree.bridge(host, "0000:00:02.0", 0)
    gpu2, lower, nic1 = tree.switch(
        port_b, "0000:06:00.0", ["0000:07:00.0", "0000:07:01.0", "0000:07:02.0"], 0
    )
    tree.gpu(gpu2, "0000:08:00.0", 0)
    (gpu3,) = tree.switch(lower, "0000:09:00.0", ["0000:0a:00.0"], 0)
    tree.gpu(gpu3, "0000:0b:00.0", 0)
    nic = tree.nic(nic1, "0000:0c:00.0", 0, {"enp12s0np0": 0})
    tree.rdma("mlx5_1", nic, {1: PortSpec(gids=roce_gids("enp12s0np0", "10.10.1.12", 0x0C00))})
    return tree


def dual_port_ib_node(root: Path) -> SysfsTree:
    """An InfiniBand-only node: one dual-port HCA, port 2 disabled, no GPUs."""
    tree = SysfsTree(root)
    host = tree.host_bridge("0000:80")
    slot = tree.bridge(host, "0000:80:02.0", 1)
    nic = tree.nic(slot, "0000:81:00.0", 1, {"ib0": 0, "ib1": 1}, mtu=4092)  # IPoIB's
    ib_gid = "fe80:0000:0000:0000:0002:c903:00f1:2a41"
    up = PortSpec(
        rate="200 Gb/sec (4X HDR)",
        link_layer="InfiniBand",
        gids=[GidEntry(0, ib_gid, LINK_LOCAL_V1)],
        counters={"symbol_error": 3, "port_rcv_errors": 1},
        table_size=128,
    )
    down = PortSpec(
        state="1: DOWN",
        phys_state="3: Disabled",
        rate="10 Gb/sec (4X SDR)",
        link_layer="InfiniBand",
        table_size=128,
    )
    tree.rdma("mlx4_0", nic, {1: up, 2: down})
    return tree


def bonded_roce_node(root: Path) -> SysfsTree:
    """A RoCE LAG (mlx5_bond_0 over both ports of one ConnectX-6 Dx) and one GPU on another
    root complex of the same socket. Its GID table holds link-local, IPv4 and global IPv6
    entries in v1/v2 pairs, and one entry whose type cannot be read (not in use)."""
    tree = SysfsTree(root)
    host = tree.host_bridge("0000:3a")
    slot = tree.bridge(host, "0000:3a:00.0", 0)
    pf0 = tree.nic(slot, "0000:3b:00.0", 0, {"bond0": 0})
    tree.nic(slot, "0000:3b:00.1", 0, {})
    ipv6 = "fd00:0000:0000:0010:0000:0000:0000:0021"
    gids = [
        *roce_gids("bond0", "172.16.0.21", 0x3B00),
        GidEntry(4, ipv6, LINK_LOCAL_V1, "bond0"),
        GidEntry(5, ipv6, V2, "bond0"),
        GidEntry(6, ipv4_gid("172.16.9.9"), None),
    ]
    tree.rdma("mlx5_bond_0", pf0, {1: PortSpec(rate="200 Gb/sec (2X HDR)", gids=gids)})
    gpu_host = tree.host_bridge("0000:17")
    gpu_slot = tree.bridge(gpu_host, "0000:17:00.0", 0)
    tree.gpu(gpu_slot, "0000:18:00.0", 0)
    return tree


OPEN_MODULE = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build"
PROPRIETARY_MODULE = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 2024"


def driver_proc(root: Path, driver: str | None, release: str) -> Path:
    """A /proc with the NVIDIA driver's version line (None: no driver loaded) and the kernel
    release, as the agent reads them."""
    if driver is not None:
        (root / "driver" / "nvidia").mkdir(parents=True)
        (root / "driver" / "nvidia" / "version").write_text(
            f"{driver}\nGCC version:  gcc version 12.3.0 (GCC)\n"
        )
    (root / "sys" / "kernel").mkdir(parents=True)
    (root / "sys" / "kernel" / "osrelease").write_text(release + "\n")
    return root
