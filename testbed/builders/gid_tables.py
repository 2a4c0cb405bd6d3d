"""Build the sysfs view a pod has of its RDMA devices from `show_gids`-style rows.

`show_gids` (from Mellanox OFED) prints one row per GID entry in use:
`DEV PORT INDEX GID IPv4 VER DEV`, the IPv4 column empty for non-IPv4 GIDs and the last column
(the netdev) empty where the kernel has none (InfiniBand). Real tables are easiest to copy in that
form; this module turns them into the kernel's tree (`class/infiniband/<dev>/ports/<p>/gids/<i>`,
`gid_attrs/types/<i>`, `gid_attrs/ndevs/<i>`, every unused entry all zeros and without a type),
through `sysfs_tree.SysfsTree`. Each device sits on its own PCI function, whose `net/` directory
holds the device's netdev, as the kernel links them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping
from pathlib import Path

from testbed.builders.sysfs_tree import LINK_LOCAL_V1, V2, GidEntry, PortSpec, SysfsTree, ipv4_gid

HEADER = """\
DEV     PORT    INDEX   GID                                     IPv4            VER     DEV
---     ----    -----   ---                                     ------------    ---     ---
"""
VERSIONS = {"v1": LINK_LOCAL_V1, "v2": V2}
Table = dict[str, dict[int, list[GidEntry]]]


def parse_show_gids(text: str) -> Table:
    """device -> port -> its GID entries, from `show_gids` output (header lines are skipped)."""
    table: Table = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5 or not fields[1].isdigit():
            continue
        device, port, index, gid, *rest = fields
        if "." in rest[0]:
            rest = rest[1:]  # the IPv4 column
        netdev = rest[1] if len(rest) > 1 else ""
        entry = GidEntry(int(index), gid, VERSIONS[rest[0]], netdev)
        table.setdefault(device, {}).setdefault(int(port), []).append(entry)
    return table


def show_gids_row(device: str, index: int, gid: str, version: str, netdev: str = "") -> str:
    """One row as `show_gids` prints it; `gid` is a full GID or an IPv4 address."""
    ip = gid if "." in gid else ""
    full = ipv4_gid(gid) if ip else ipaddress.IPv6Address(gid).exploded
    return f"{device}\t1\t{index}\t{full}\t{ip:<14}\t{version}\t{netdev}"


def build_view(
    root: Path,
    show_gids: str,
    *,
    infiniband: Collection[str] = (),
    down: Collection[str] = (),
    netdevs: Mapping[str, str] | None = None,
) -> SysfsTree:
    """The tree for the devices in `show_gids`: RoCE unless named in `infiniband`, ACTIVE
    unless named in `down`. A device's netdev is `netdevs[device]`, else the one its rows name."""
    tree = SysfsTree(root)
    host = tree.host_bridge("0000:00")
    for number, (device, ports) in enumerate(parse_show_gids(show_gids).items()):
        netdev = (netdevs or {}).get(device) or _first_netdev(ports)
        slot = tree.bridge(host, f"0000:00:{number + 1:02x}.0", 0)
        function = tree.nic(slot, f"0000:{number + 1:02x}:00.0", 0, {netdev: 0} if netdev else {})
        specs = {
            port: _port_spec(entries, device in infiniband, device in down)
            for port, entries in ports.items()
        }
        tree.rdma(device, function, specs)
    return tree


def _first_netdev(ports: dict[int, list[GidEntry]]) -> str:
    return next((e.netdev for entries in ports.values() for e in entries if e.netdev), "")


def _port_spec(entries: list[GidEntry], infiniband: bool, down: bool) -> PortSpec:
    spec = PortSpec(gids=entries)
    if infiniband:
        spec.link_layer, spec.table_size = "InfiniBand", 128
    if down:
        spec.state, spec.phys_state = "1: DOWN", "3: Disabled"
    return spec


def rail_host(devices: int = 8, pods_per_device: int = 0) -> str:
    """`show_gids` of a RoCE host with one rail per device: link-local at 0/1, the host's rail
    address at 2/3, then `pods_per_device` macvlan pods' addresses in v1/v2 pairs (125 pods fill
    a 255-entry table up to index 253)."""
    rows = HEADER.splitlines()
    for rail in range(devices):
        device, netdev = f"mlx5_{rail}", f"ens{rail + 1}f0np0"
        link_local = f"fe80::ac0:ebff:fe{rail:02x}:{rail:x}00"
        addresses = [link_local, f"192.168.{rail}.1"]
        addresses += [f"192.168.{rail}.{pod + 10}" for pod in range(pods_per_device)]
        for pair, address in enumerate(addresses):
            rows.append(show_gids_row(device, 2 * pair, address, "v1", netdev))
            rows.append(show_gids_row(device, 2 * pair + 1, address, "v2", netdev))
    return "\n".join(rows) + "\n"


# Real tables, as `show_gids` prints them inside the pod.

# A host's mlx5_0 as a pod in the shared RDMA namespace sees it: the host's rail address at 2/3,
# another macvlan pod at 4/5, this pod's 192.168.1.21 at 6/7; mlx5_1 carries only the host's.
HOST_VIEW = f"""{HEADER}\
mlx5_0  1   0   fe80:0000:0000:0000:0ac0:ebff:fe10:0a00                 v1  ens1f0np0
mlx5_0  1   1   fe80:0000:0000:0000:0ac0:ebff:fe10:0a00                 v2  ens1f0np0
mlx5_0  1   2   0000:0000:0000:0000:0000:ffff:c0a8:010b 192.168.1.11    v1  ens1f0np0
mlx5_0  1   3   0000:0000:0000:0000:0000:ffff:c0a8:010b 192.168.1.11    v2  ens1f0np0
mlx5_0  1   4   0000:0000:0000:0000:0000:ffff:c0a8:0114 192.168.1.20    v1  ens1f0np0
mlx5_0  1   5   0000:0000:0000:0000:0000:ffff:c0a8:0114 192.168.1.20    v2  ens1f0np0
mlx5_0  1   6   0000:0000:0000:0000:0000:ffff:c0a8:0115 192.168.1.21    v1  ens1f0np0
mlx5_0  1   7   0000:0000:0000:0000:0000:ffff:c0a8:0115 192.168.1.21    v2  ens1f0np0
mlx5_1  1   0   fe80:0000:0000:0000:0ac0:ebff:fe10:0b00                 v1  ens2f0np0
mlx5_1  1   1   fe80:0000:0000:0000:0ac0:ebff:fe10:0b00                 v2  ens2f0np0
mlx5_1  1   2   0000:0000:0000:0000:0000:ffff:c0a8:020b 192.168.2.11    v1  ens2f0np0
mlx5_1  1   3   0000:0000:0000:0000:0000:ffff:c0a8:020b 192.168.2.11    v2  ens2f0np0
"""

# A ConnectX-6 with two link-local entries (the port's and a VLAN's) before its IPv4 pair.
TWO_LINK_LOCAL = f"""{HEADER}\
mlx5_2  1   0   fe80:0000:0000:0000:0ac0:ebff:fe20:0100                 v1  ens3f0np0
mlx5_2  1   1   fe80:0000:0000:0000:0ac0:ebff:fe20:0100                 v2  ens3f0np0
mlx5_2  1   2   fe80:0000:0000:0000:0ac0:ebff:fe20:0101                 v1  ens3f0np0.100
mlx5_2  1   3   fe80:0000:0000:0000:0ac0:ebff:fe20:0101                 v2  ens3f0np0.100
mlx5_2  1   4   0000:0000:0000:0000:0000:ffff:c0a8:0315 192.168.3.21    v1  ens3f0np0
mlx5_2  1   5   0000:0000:0000:0000:0000:ffff:c0a8:0315 192.168.3.21    v2  ens3f0np0
"""

# Two macvlan pods on one mlx5_4: the parent's address at 2/3, pod A's at 4/5, pod B's at 6/7.
MACVLAN = f"""{HEADER}\
mlx5_4  1   0   fe80:0000:0000:0000:0ac0:ebff:fe40:0400                 v1  net1
mlx5_4  1   1   fe80:0000:0000:0000:0ac0:ebff:fe40:0400                 v2  net1
mlx5_4  1   2   0000:0000:0000:0000:0000:ffff:c0a8:040b 192.168.4.11    v1  net1
mlx5_4  1   3   0000:0000:0000:0000:0000:ffff:c0a8:040b 192.168.4.11    v2  net1
mlx5_4  1   4   0000:0000:0000:0000:0000:ffff:c0a8:040a 192.168.4.10    v1  net1
mlx5_4  1   5   0000:0000:0000:0000:0000:ffff:c0a8:040a 192.168.4.10    v2  net1
mlx5_4  1   6   0000:0000:0000:0000:0000:ffff:c0a8:0414 192.168.4.20    v1  net1
mlx5_4  1   7   0000:0000:0000:0000:0000:ffff:c0a8:0414 192.168.4.20    v2  net1
"""

BOND = f"""{HEADER}\
mlx5_bond_0 1   0   fe80:0000:0000:0000:0ac0:ebff:fe3b:0000                 v1  bond0
mlx5_bond_0 1   1   fe80:0000:0000:0000:0ac0:ebff:fe3b:0000                 v2  bond0
mlx5_bond_0 1   2   0000:0000:0000:0000:0000:ffff:ac10:0015 172.16.0.21     v1  bond0
mlx5_bond_0 1   3   0000:0000:0000:0000:0000:ffff:ac10:0015 172.16.0.21     v2  bond0
"""

# A vendor that installs RoCE v2 entries only: link-local at 0, IPv4 at 1.
V2_ONLY = f"""{HEADER}\
rocep1s0f0  1   0   fe80:0000:0000:0000:0ac0:ebff:fe50:0500                 v2  ens5f0
rocep1s0f0  1   1   0000:0000:0000:0000:0000:ffff:c0a8:0515 192.168.5.21    v2  ens5f0
"""

IPV6 = f"""{HEADER}\
mlx5_6  1   0   fe80:0000:0000:0000:0ac0:ebff:fe60:0600                 v1  net1
mlx5_6  1   1   fe80:0000:0000:0000:0ac0:ebff:fe60:0600                 v2  net1
mlx5_6  1   2   fd00:0000:0000:0010:0000:0000:0000:0021                 v1  net1
mlx5_6  1   3   fd00:0000:0000:0010:0000:0000:0000:0021                 v2  net1
"""

# An SR-IOV pod sees its VF under the VF's own device name.
SRIOV_VF = f"""{HEADER}\
mlx5_12 1   0   fe80:0000:0000:0000:0ac0:ebff:fe0c:1200                 v1  net1
mlx5_12 1   1   fe80:0000:0000:0000:0ac0:ebff:fe0c:1200                 v2  net1
mlx5_12 1   2   0000:0000:0000:0000:0000:ffff:c0a8:0c15 192.168.12.21   v1  net1
mlx5_12 1   3   0000:0000:0000:0000:0000:ffff:c0a8:0c15 192.168.12.21   v2  net1
"""

INFINIBAND = f"""{HEADER}\
mlx5_0  1   0   fe80:0000:0000:0000:a088:c203:0045:6a10                 v1
mlx5_1  1   0   fe80:0000:0000:0000:a088:c203:0045:6a11                 v1
mlx5_2  1   0   fe80:0000:0000:0000:a088:c203:0045:6a12                 v1
"""

V1_ONLY = f"""{HEADER}\
mlx5_0  1   0   fe80:0000:0000:0000:0ac0:ebff:fe10:0a00                 v1  net1
mlx5_0  1   1   0000:0000:0000:0000:0000:ffff:c0a8:0115 192.168.1.21    v1  net1
"""

# Two rails whose tables differ: the pod's address at 3 on mlx5_0 and at 5 on mlx5_1.
UNEVEN_RAILS = f"""{HEADER}\
mlx5_0  1   0   fe80:0000:0000:0000:0ac0:ebff:fe10:0a00                 v1  net1
mlx5_0  1   1   fe80:0000:0000:0000:0ac0:ebff:fe10:0a00                 v2  net1
mlx5_0  1   2   0000:0000:0000:0000:0000:ffff:c0a8:0115 192.168.1.21    v1  net1
mlx5_0  1   3   0000:0000:0000:0000:0000:ffff:c0a8:0115 192.168.1.21    v2  net1
mlx5_1  1   0   fe80:0000:0000:0000:0ac0:ebff:fe10:0b00                 v1  net2
mlx5_1  1   1   fe80:0000:0000:0000:0ac0:ebff:fe10:0b00                 v2  net2
mlx5_1  1   2   fe80:0000:0000:0000:0ac0:ebff:fe10:0b01                 v1  net2
mlx5_1  1   3   fe80:0000:0000:0000:0ac0:ebff:fe10:0b01                 v2  net2
mlx5_1  1   4   0000:0000:0000:0000:0000:ffff:c0a8:0215 192.168.2.21    v1  net2
mlx5_1  1   5   0000:0000:0000:0000:0000:ffff:c0a8:0215 192.168.2.21    v2  net2
"""
