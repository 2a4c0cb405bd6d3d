"""`kube-rdma nccl-conf` on the GID tables real setups show a pod: the exact file and exact errors.

Each case is the `show_gids` output the pod would see and the pod's namespace (interfaces,
addresses, default route), written as the kernel's sysfs and /proc files and run through the CLI.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pytest

from kube_rdma_cli.dispatch import main
from testbed.builders.gid_tables import (
    BOND,
    HEADER,
    HOST_VIEW,
    INFINIBAND,
    IPV6,
    MACVLAN,
    SRIOV_VF,
    TWO_LINK_LOCAL,
    UNEVEN_RAILS,
    V1_ONLY,
    V2_ONLY,
    build_view,
    rail_host,
)
from testbed.builders.proc_net import Interface, Namespace, write_proc

PREFIX = "kube-rdma nccl-conf: "
CALICO = Interface("eth0", ["10.244.1.7/32"])
VIA_CALICO = ("eth0", "169.254.1.1")

UNEVEN_POD = Namespace(
    [CALICO, Interface("net1", ["192.168.1.21/24"]), Interface("net2", ["192.168.2.21/24"])],
    VIA_CALICO,
)
UNEVEN_PROBLEM = (
    "the ports need different GID indexes (mlx5_0:1 at 3, mlx5_1:1 at 5) but "
    "NCCL_IB_GID_INDEX is one value for all devices; use gid.strategy auto with "
    "NCCL >= 2.21.5 instead"
)


class ViewOptions(TypedDict, total=False):
    infiniband: set[str]
    down: set[str]
    netdevs: dict[str, str]


@dataclass(frozen=True)
class Outcome:
    code: int
    conf: str | None
    err: str
    termination: str | None


@pytest.fixture
def nccl_conf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Runner:
    return Runner(tmp_path, capsys)


@dataclass
class Runner:
    tmp: Path
    capsys: pytest.CaptureFixture[str]

    @property
    def sysfs(self) -> Path:
        return self.tmp / "sys"

    def view(self, show_gids: str, options: ViewOptions | None = None) -> Runner:
        build_view(self.sysfs, show_gids, **(options or {}))
        return self

    def __call__(self, namespace: Namespace | None, *args: str) -> Outcome:
        proc = write_proc(self.tmp / "proc", namespace) if namespace else self.tmp / "proc"
        out, log = self.tmp / "nccl.conf", self.tmp / "termination-log"
        code = main(
            [
                "nccl-conf",
                *("--sysfs-root", str(self.sysfs), "--proc-root", str(proc)),
                *("--out", str(out), "--termination-log", str(log), *args),
            ]
        )
        return Outcome(code, _text(out), self.capsys.readouterr().err, _text(log))


def _text(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


DISCOVERED = (
    "discovered in the pod's network namespace "
    "(no device data at /var/run/kubernetes.io/dra-device-attributes)"
)


def written(*lines: str, source: str = DISCOVERED) -> Outcome:
    """Exit 0 with exactly these file lines after the source comment, each also logged to
    stderr after the source."""
    conf = "".join(f"{line}\n" for line in [f"# {PREFIX}{source}", *lines])
    err = "".join(f"{PREFIX}{line}\n" for line in [source, *lines])
    return Outcome(0, conf, err, None)


def failed(problem: str) -> Outcome:
    """Exit 1, no file, the one line on stderr and in the termination log."""
    return Outcome(1, None, f"{PREFIX}{problem}\n", f"{PREFIX}{problem}\n")


def pod(*interfaces: Interface, via: tuple[str, str] = VIA_CALICO) -> Namespace:
    return Namespace([CALICO, *interfaces], via)


CASES = {
    "host view: the pod's address at 7, not the host's at 3": (
        HOST_VIEW,
        {},
        pod(Interface("net1", ["192.168.1.21/24"])),
        [],
        written("NCCL_IB_GID_INDEX=7", "NCCL_IB_HCA==mlx5_0:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "two link-local entries first: 5, not 3": (
        TWO_LINK_LOCAL,
        {},
        pod(Interface("net1", ["192.168.3.21/24"])),
        [],
        written("NCCL_IB_GID_INDEX=5", "NCCL_IB_HCA==mlx5_2:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "macvlan pod A on mlx5_4": (
        MACVLAN,
        {},
        pod(Interface("net1", ["192.168.4.10/24"])),
        [],
        written("NCCL_IB_GID_INDEX=5", "NCCL_IB_HCA==mlx5_4:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "macvlan pod B on the same mlx5_4": (
        MACVLAN,
        {},
        pod(Interface("net1", ["192.168.4.20/24"])),
        [],
        written("NCCL_IB_GID_INDEX=7", "NCCL_IB_HCA==mlx5_4:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "macvlan pod A asking for RoCE v1": (
        MACVLAN,
        {},
        pod(Interface("net1", ["192.168.4.10/24"])),
        ["--roce-version", "1"],
        written("NCCL_IB_GID_INDEX=4", "NCCL_IB_HCA==mlx5_4:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "hostNetwork pod on a RoCE LAG": (
        BOND,
        {},
        Namespace([Interface("bond0", ["172.16.0.21/24"])], ("bond0", "172.16.0.1")),
        [],
        written("NCCL_IB_GID_INDEX=3", "NCCL_IB_HCA==mlx5_bond_0:1", "NCCL_SOCKET_IFNAME==bond0"),
    ),
    "a vendor with RoCE v2 entries only": (
        V2_ONLY,
        {},
        pod(Interface("net1", ["192.168.5.21/24"])),
        [],
        written("NCCL_IB_GID_INDEX=1", "NCCL_IB_HCA==rocep1s0f0:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "an IPv6-only pod": (
        IPV6,
        {},
        Namespace(
            [Interface("eth0", ["fd00:244::7/128"]), Interface("net1", ["fd00:0:0:10::21/64"])],
            default6_via=("eth0", "fe80::1"),
        ),
        ["--family", "ipv6"],
        written("NCCL_IB_GID_INDEX=3", "NCCL_IB_HCA==mlx5_6:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "an SR-IOV VF under its own name": (
        SRIOV_VF,
        {},
        pod(Interface("net1", ["192.168.12.21/24"])),
        [],
        written("NCCL_IB_GID_INDEX=3", "NCCL_IB_HCA==mlx5_12:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "InfiniBand: the port whose IPoIB interface the pod holds, no GID index": (
        INFINIBAND,
        {"infiniband": {"mlx5_0", "mlx5_1", "mlx5_2"}, "netdevs": {"mlx5_0": "ib0"}},
        pod(Interface("ib0", ["10.10.0.5/16"])),
        [],
        written("NCCL_IB_HCA==mlx5_0:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "InfiniBand without IPoIB in the pod: every ACTIVE port": (
        INFINIBAND,
        {"infiniband": {"mlx5_0", "mlx5_1", "mlx5_2"}, "down": {"mlx5_2"}},
        pod(),
        [],
        written("NCCL_IB_HCA==mlx5_0:1,mlx5_1:1", "NCCL_SOCKET_IFNAME==eth0"),
    ),
    "a pod with only a Calico veth": (
        HOST_VIEW,
        {},
        pod(),
        [],
        failed(
            "no RDMA port carries a RoCE v2 GID of the pod's IPv4 addresses (10.244.1.7 on "
            "eth0); ports seen: mlx5_0:1 (Ethernet, ACTIVE, RoCE v2 IPv4 GIDs: 192.168.1.11, "
            "192.168.1.20, 192.168.1.21), mlx5_1:1 (Ethernet, ACTIVE, RoCE v2 IPv4 GIDs: "
            "192.168.2.11)"
        ),
    ),
    "a Calico pod on a crowded macvlan host, one rail down": (
        rail_host(devices=2, pods_per_device=5),
        {"down": {"mlx5_1"}},
        pod(),
        [],
        failed(
            "no RDMA port carries a RoCE v2 GID of the pod's IPv4 addresses (10.244.1.7 on "
            "eth0); ports seen: mlx5_0:1 (Ethernet, ACTIVE, RoCE v2 IPv4 GIDs: 192.168.0.1, "
            "192.168.0.10, 192.168.0.11, 192.168.0.12 and 2 more), mlx5_1:1 (Ethernet, DOWN)"
        ),
    ),
    "no RDMA device at all": (
        HEADER,
        {},
        Namespace([], None),
        [],
        failed(
            "no RDMA port carries a RoCE v2 GID of the pod's IPv4 addresses (none); "
            "ports seen: none"
        ),
    ),
    "a RoCE v1-only table asked for RoCE v2": (
        V1_ONLY,
        {},
        pod(Interface("net1", ["192.168.1.21/24"])),
        [],
        failed("mlx5_0:1 has no RoCE v2 GID of 192.168.1.21 (only RoCE v1 at index 1)"),
    ),
    "rails that need different GID indexes": (
        UNEVEN_RAILS,
        {},
        UNEVEN_POD,
        [],
        failed(UNEVEN_PROBLEM),
    ),
    "rails that need different GID indexes, warned": (
        UNEVEN_RAILS,
        {},
        UNEVEN_POD,
        ["--on-missing", "warn"],
        Outcome(
            0,
            f"# {PREFIX}{DISCOVERED}\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_SOCKET_IFNAME==eth0\n",
            f"{PREFIX}warning: {UNEVEN_PROBLEM}\n{PREFIX}{DISCOVERED}\n"
            f"{PREFIX}NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n{PREFIX}NCCL_SOCKET_IFNAME==eth0\n",
            None,
        ),
    ),
}


@pytest.mark.parametrize(
    ("show_gids", "view", "namespace", "args", "expected"), CASES.values(), ids=CASES.keys()
)
def test_resolves(
    nccl_conf: Runner,
    show_gids: str,
    view: ViewOptions,
    namespace: Namespace,
    args: list[str],
    expected: Outcome,
) -> None:
    assert nccl_conf.view(show_gids, view)(namespace, *args) == expected


def test_warn_mode_writes_what_it_can(nccl_conf: Runner) -> None:
    outcome = nccl_conf.view(HOST_VIEW)(pod(), "--on-missing", "warn")
    problem = (
        "no RDMA port carries a RoCE v2 GID of the pod's IPv4 addresses (10.244.1.7 on eth0); "
        "ports seen: mlx5_0:1 (Ethernet, ACTIVE, RoCE v2 IPv4 GIDs: 192.168.1.11, 192.168.1.20, "
        "192.168.1.21), mlx5_1:1 (Ethernet, ACTIVE, RoCE v2 IPv4 GIDs: 192.168.2.11)"
    )
    assert outcome == Outcome(
        0,
        f"# {PREFIX}{DISCOVERED}\nNCCL_SOCKET_IFNAME==eth0\n",
        f"{PREFIX}warning: {problem}\n{PREFIX}{DISCOVERED}\n{PREFIX}NCCL_SOCKET_IFNAME==eth0\n",
        None,
    )


def test_given_addresses_replace_the_kernels(nccl_conf: Runner) -> None:
    outcome = nccl_conf.view(MACVLAN)(None, "--addresses", "10.244.1.7, 192.168.4.20")
    assert outcome == written("NCCL_IB_GID_INDEX=7", "NCCL_IB_HCA==mlx5_4:1")


def test_garbled_sysfs_names_the_file(nccl_conf: Runner) -> None:
    nccl_conf.view(MACVLAN)
    link_layer = nccl_conf.sysfs / "class/infiniband/mlx5_4/ports/1/link_layer"
    link_layer.write_text("Omni-Path\n")
    outcome = nccl_conf(pod(Interface("net1", ["192.168.4.10/24"])))
    assert outcome == failed(f"{link_layer}: expected InfiniBand or Ethernet, got 'Omni-Path'")


def test_unreadable_proc_file_names_it(nccl_conf: Runner) -> None:
    proc = nccl_conf.tmp / "proc"
    (proc / "net" / "route").mkdir(parents=True)
    outcome = nccl_conf.view(MACVLAN)(None)
    assert outcome == failed(f"{proc}/net/route: cannot read: Is a directory")


def test_unwritable_out_fails_even_when_warned(nccl_conf: Runner) -> None:
    (nccl_conf.tmp / "nccl.conf").mkdir()
    outcome = nccl_conf.view(MACVLAN)(None, "--addresses", "192.168.4.10", "--on-missing", "warn")
    problem = f"cannot write {nccl_conf.tmp}/nccl.conf: Is a directory"
    assert outcome == Outcome(1, None, f"{PREFIX}{problem}\n", f"{PREFIX}{problem}\n")


def test_bad_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["nccl-conf", "--addresses", "10.0.0.300"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        "kube-rdma nccl-conf: error: argument --addresses: "
        "'10.0.0.300' does not appear to be an IPv4 or IPv6 address\n"
    )


def test_prints_the_file_without_out(tmp_path: Path) -> None:
    build_view(tmp_path / "sys", SRIOV_VF)
    proc = write_proc(tmp_path / "proc", pod(Interface("net1", ["192.168.12.21/24"])))
    command = [sys.executable, "-m", "kube_rdma_cli", "nccl-conf"]
    done = subprocess.run(
        [*command, "--sysfs-root", f"{tmp_path}/sys", "--proc-root", str(proc)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = ["NCCL_IB_GID_INDEX=3", "NCCL_IB_HCA==mlx5_12:1", "NCCL_SOCKET_IFNAME==eth0"]
    expected = written(*lines)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected.conf, expected.err)


def test_the_profiles_own_settings_follow_the_resolved_lines(nccl_conf: Runner) -> None:
    outcome = nccl_conf.view(MACVLAN)(
        pod(Interface("net1", ["192.168.4.20/24"])),
        "--set=NCCL_IB_DISABLE=0",
        "--set",
        "NCCL_NET=IB",
    )
    assert outcome == written(
        "NCCL_IB_GID_INDEX=7",
        "NCCL_IB_HCA==mlx5_4:1",
        "NCCL_SOCKET_IFNAME==eth0",
        "NCCL_IB_DISABLE=0",
        "NCCL_NET=IB",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NCCL_IB_HCA==mlx5_0", "NCCL_IB_HCA is what nccl-conf resolves; it cannot be set"),
        ("UCX_TLS=rc", "'UCX_TLS=rc' is not NCCL_NAME=VALUE"),
        ("NCCL_NET", "'NCCL_NET' is not NCCL_NAME=VALUE"),
    ],
)
def test_a_setting_it_cannot_take_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["nccl-conf", "--set", value])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"kube-rdma nccl-conf: error: argument --set: {message}"
    )
