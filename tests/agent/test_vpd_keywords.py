"""A non-root agent on a ConnectX-8 Data Direct tray: `agent read-vpd` (the init container)
writes the VPD keywords, the agent reads a VPD from sysfs when it can and from that file when it
cannot, and says what to do when neither works.

The unreadable case is made real: the VPD files are the kernel's mode 0600 and the agent's reads
run as user 65532 (in a forked child when the tests run as root; as a non-root test user, the
files are made mode 0000, which denies their owner too)."""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from agent.sysfs import scan
from agent.vpd_command import vpd_reader
from agent.vpd_keywords import VpdReader, describe_source, load
from kube_rdma_cli.dispatch import main
from testbed.builders import gb300_tree
from testbed.builders.sysfs_tree import SysfsTree

T = TypeVar("T")
NO_PROC = Path("/nonexistent/proc")
AGENT_USER = 65532
DATA_DIRECT = ("0008:03:00.0", "0009:03:00.0", "0018:03:00.0", "0019:03:00.0")
NICS = ("0000:01:00.0", "0002:01:00.0", "0010:01:00.0", "0012:01:00.0")
ADAPTER_OF = {
    "0000": 0,
    "0002": 1,
    "0010": 2,
    "0012": 3,
    "0009": 0,
    "0008": 1,
    "0019": 2,
    "0018": 3,
}
PAIRED = {
    0: ["NODE", "PXB", "SYS", "SYS"],
    1: ["PXB", "NODE", "SYS", "SYS"],
    2: ["SYS", "SYS", "NODE", "PXB"],
    3: ["SYS", "SYS", "PXB", "NODE"],
}
UNPAIRED = {
    0: ["NODE", "NODE", "SYS", "SYS"],
    1: ["NODE", "NODE", "SYS", "SYS"],
    2: ["SYS", "SYS", "NODE", "NODE"],
    3: ["SYS", "SYS", "NODE", "NODE"],
}
FIX = (
    "run `kube-rdma agent read-vpd` as user 0 in an init container and give the agent its file "
    "with --vpd-file (manifests/agent/daemonset.yaml does), or run the agent as root"
)
FALLBACK = "its NIC pairs with GPUs through the NIC's own function"


@pytest.fixture
def tray() -> Iterator[Path]:
    """A GB300 tray in a directory user 65532 may enter (pytest's tmp_path is root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="kube-rdma-vpd-"))
    os.chmod(root, 0o755)
    gb300_tree.gb300_node(root / "sys")
    yield root
    shutil.rmtree(root)


def lock_vpds(sysfs: Path) -> None:
    """The kernel's mode for every VPD file: 0600, root's."""
    mode = 0o600 if os.geteuid() == 0 else 0o000
    for vpd in sysfs.glob("bus/pci/devices/*/vpd"):
        os.chmod(vpd.resolve(), mode)


def as_agent_user(work: Callable[[], T]) -> T:
    """`work`'s result, computed by a process that is not root."""
    if os.geteuid() != 0:
        return work()
    readable, writable = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's coverage is not collected)
        os.close(readable)
        try:
            os.setgroups([])
            os.setgid(AGENT_USER)
            os.setuid(AGENT_USER)
            outcome: object = work()
        except BaseException as e:
            outcome = e
        with os.fdopen(writable, "wb") as out:
            out.write(pickle.dumps(outcome))
        os._exit(0)
    os.close(writable)
    with os.fdopen(readable, "rb") as answer:
        data = answer.read()
    os.waitpid(child, 0)
    answered = pickle.loads(data)
    if isinstance(answered, BaseException):
        raise answered
    result: T = answered
    return result


def levels(sysfs: Path, reader: VpdReader, problems: list[str]) -> dict[int, list[str]]:
    matrix: dict[int, list[str]] = {}
    for pair in scan(sysfs, NO_PROC, problems, reader).pairs:
        matrix.setdefault(pair.gpu, []).append(pair.level.value)
    return matrix


def read_vpd(sysfs: Path, out: Path) -> int:
    return main(["agent", "read-vpd", "--sysfs-root", str(sysfs), "--out", str(out)])


def test_read_vpd_writes_the_keywords_data_direct_matching_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gb300_tree.gb300_node(tmp_path / "sys")
    out = tmp_path / "keywords.json"
    assert read_vpd(tmp_path / "sys", out) == 0
    functions = {
        address: {
            "V3": gb300_tree.adapter_uuid(ADAPTER_OF[address[:4]]),
            "VU": gb300_tree.serial(ADAPTER_OF[address[:4]])
            + ("MLNXS1D0F0" if address in DATA_DIRECT else "MLNXS0D0F0"),
        }
        for address in sorted(DATA_DIRECT + NICS)
    }
    assert json.loads(out.read_text()) == {"functions": functions, "unreadable": {}, "version": 1}
    assert out.stat().st_mode & 0o777 == 0o644
    assert [json.loads(line)["msg"] for line in capsys.readouterr().err.splitlines()] == [
        f"read-vpd: wrote the VPD keywords of 8 functions to {out} (0 unreadable)"
    ]


def test_read_vpd_reads_nothing_on_a_node_without_data_direct(tmp_path: Path) -> None:
    gb300_tree.gb300_node(tmp_path / "sys", data_direct=False)
    assert read_vpd(tmp_path / "sys", tmp_path / "k.json") == 0
    assert json.loads((tmp_path / "k.json").read_text()) == {
        "functions": {},
        "unreadable": {},
        "version": 1,
    }


def test_read_vpd_records_a_vpd_it_cannot_read_and_still_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pod must start either way; the agent reports the NIC it cannot pair."""
    gb300_tree.gb300_node(tmp_path / "sys")
    vpd = tmp_path / "sys/bus/pci/devices/0008:03:00.0/vpd"
    SysfsTree.unreadable(vpd)
    garbage = tmp_path / "sys/bus/pci/devices/0009:03:00.0/vpd"
    garbage.write_bytes(b"\xff" * 16)
    assert read_vpd(tmp_path / "sys", tmp_path / "k.json") == 0
    written = json.loads((tmp_path / "k.json").read_text())
    assert written["unreadable"] == {
        "0008:03:00.0": f"cannot read {vpd}: Is a directory",
        "0009:03:00.0": f"{garbage}: no read-only section (large resource tag 0x90)",
    }
    assert len(written["functions"]) == 6
    messages = [json.loads(line)["msg"] for line in capsys.readouterr().err.splitlines()]
    assert messages[0] == f"read-vpd: 0008:03:00.0: cannot read {vpd}: Is a directory"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--sysfs-root", "/nonexistent/sys", "--out", "/tmp/k.json"],
            "kube-rdma agent read-vpd: --sysfs-root /nonexistent/sys is not a directory; mount "
            "the host's /sys there\n",
        ),
        (
            ["--out", "/nonexistent/dir/k.json"],
            "kube-rdma agent read-vpd: cannot write /nonexistent/dir/k.json: No such file or "
            "directory; mount a writable emptyDir there (manifests/agent/daemonset.yaml)\n",
        ),
    ],
)
def test_read_vpd_exits_2_when_it_cannot_do_its_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    gb300_tree.gb300_node(tmp_path / "sys")
    if "--sysfs-root" not in args:
        args = ["--sysfs-root", str(tmp_path / "sys"), *args]
    assert main(["agent", "read-vpd", *args]) == 2
    assert capsys.readouterr().err == message


def test_the_agent_reads_the_file_where_sysfs_cannot_be_read(tray: Path) -> None:
    sysfs, out = tray / "sys", tray / "keywords.json"
    assert read_vpd(sysfs, out) == 0  # as user 0, like the init container
    lock_vpds(sysfs)

    def agent() -> tuple[dict[int, list[str]], list[str], tuple[int, str]]:
        reader = VpdReader(load(out))
        problems: list[str] = []
        return levels(sysfs, reader, problems), problems, describe_source(sysfs, reader)

    matrix, problems, source = as_agent_user(agent)
    assert (matrix, problems) == (PAIRED, [])
    assert source == (
        logging.INFO,
        "4 ConnectX-8 Data Direct functions; this process cannot read VPD files (Permission "
        f"denied): their keywords come from {out}",
    )


def test_without_the_file_an_unreadable_vpd_is_reported_with_what_to_do(tray: Path) -> None:
    """The NICs pair through their own functions, which is wrong on this tray: never silently."""
    sysfs = tray / "sys"
    lock_vpds(sysfs)

    def agent() -> tuple[dict[int, list[str]], list[str], tuple[int, str]]:
        reader = VpdReader()
        problems: list[str] = []
        return levels(sysfs, reader, problems), problems, describe_source(sysfs, reader)

    matrix, problems, source = as_agent_user(agent)
    assert matrix == UNPAIRED
    devices = sysfs / "bus/pci/devices"
    assert problems == [
        *(
            f"mlx5_{i}: cannot read {devices / a / 'vpd'}: Permission denied (VPD files are "
            f"root's: {FIX}; docs/agent.md); no Data Direct function can be matched to it"
            for i, a in enumerate(NICS)
        ),
        *(
            f"{a} (ConnectX-8 Data Direct): cannot read {devices / a / 'vpd'}: Permission "
            f"denied (VPD files are root's: {FIX}; docs/agent.md); {FALLBACK}"
            for a in DATA_DIRECT
        ),
    ]
    assert source == (
        logging.WARNING,
        "4 ConnectX-8 Data Direct functions; this process cannot read VPD files (Permission "
        "denied) and no --vpd-file was given: their NICs pair with GPUs through the NICs' own "
        f"functions, which is wrong on these trays; {FIX}",
    )


def break_vpds(sysfs: Path) -> None:
    """Every VPD unreadable for any user (a directory where the file was), so that the
    fallback to the file runs in this process, root or not."""
    for vpd in sysfs.glob("bus/pci/devices/*/vpd"):
        SysfsTree.unreadable(vpd.resolve())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "{file}: cannot read: No such file or directory"),
        ("{", "{file}: not JSON (Expecting property name enclosed in double quotes: line 1 "
         "column 2 (char 1)); `kube-rdma agent read-vpd` writes it"),
        ('{"version": 2}', "{file}: not a version 1 keywords file; write it with the same "
         "kube-rdma image as the agent (`kube-rdma agent read-vpd`)"),
        ('{"version": 1, "functions": []}',
         "{file}: `functions` and `unreadable` must be objects"),
        ('{"version": 1, "functions": {"a": {"V3": 1}}, "unreadable": {}}',
         "{file}: `functions` must map PCI addresses to keywords"),
    ],
    ids=["missing", "not-json", "other-version", "wrong-shape", "not-strings"],
)  # fmt: skip
def test_a_keywords_file_that_cannot_be_used_is_named(
    tmp_path: Path, text: str | None, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    sysfs, out = tmp_path / "sys", tmp_path / "keywords.json"
    gb300_tree.gb300_node(sysfs)
    if text is not None:
        out.write_text(text)
    break_vpds(sysfs)
    why = problem.format(file=out)
    problems: list[str] = []
    with caplog.at_level(logging.INFO, logger="kube_rdma.agent"):
        assert levels(sysfs, vpd_reader(sysfs, out), problems) == UNPAIRED
    vpd = sysfs / "bus/pci/devices/0008:03:00.0/vpd"
    assert (
        f"0008:03:00.0 (ConnectX-8 Data Direct): cannot read {vpd}: Is a directory, and {why}; "
        f"{FALLBACK}"
    ) in problems
    assert len(problems) == 8
    # A VPD that is a directory is that function's trouble, not root's: the scan says it.
    assert [r.getMessage() for r in caplog.records] == [
        "vpd: 4 ConnectX-8 Data Direct functions: VPDs read from sysfs"
    ]


def test_what_the_file_lacks_or_could_not_read_is_said(tmp_path: Path) -> None:
    sysfs, out = tmp_path / "sys", tmp_path / "keywords.json"
    gb300_tree.gb300_node(sysfs)
    assert read_vpd(sysfs, out) == 0
    body = json.loads(out.read_text())
    del body["functions"]["0008:03:00.0"]
    body["functions"].pop("0009:03:00.0")
    body["unreadable"]["0009:03:00.0"] = "cannot read X: Input/output error"
    out.write_text(json.dumps(body))
    break_vpds(sysfs)
    problems: list[str] = []
    levels(sysfs, VpdReader(load(out)), problems)
    devices = sysfs / "bus/pci/devices"
    assert problems == [
        f"0008:03:00.0 (ConnectX-8 Data Direct): cannot read {devices}/0008:03:00.0/vpd: "
        f"Is a directory, and {out} has no entry for it (a function that appeared after the "
        f"pod started: restart the agent's pod); {FALLBACK}",
        f"0009:03:00.0 (ConnectX-8 Data Direct): cannot read {devices}/0009:03:00.0/vpd: "
        f"Is a directory, nor could read-vpd: cannot read X: Input/output error; {FALLBACK}",
    ]


def test_the_file_stands_in_for_every_vpd_sysfs_cannot_give(tmp_path: Path) -> None:
    sysfs, out = tmp_path / "sys", tmp_path / "keywords.json"
    gb300_tree.gb300_node(sysfs)
    assert read_vpd(sysfs, out) == 0
    break_vpds(sysfs)
    problems: list[str] = []
    assert levels(sysfs, VpdReader(load(out)), problems) == PAIRED
    assert problems == []


def test_sysfs_wins_where_it_can_be_read(tmp_path: Path) -> None:
    """A file that disagrees with sysfs is not read while sysfs answers."""
    gb300_tree.gb300_node(tmp_path / "sys")
    out = tmp_path / "k.json"
    out.write_text('{"version": 1, "functions": {}, "unreadable": {}}')
    problems: list[str] = []
    assert levels(tmp_path / "sys", VpdReader(load(out)), problems) == PAIRED
    assert problems == []
