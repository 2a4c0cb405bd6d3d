"""A PCI function's VPD keywords for a node agent that does not run as root.

The kernel makes every `vpd` file root's alone (drivers/pci/vpd.c: `BIN_ATTR(vpd, 0600, ...)`),
and reading one needs nothing more: vpd_read checks no capability, so a process of user 0 reads
it through the file's owner bits with every capability dropped (user 0 of the host's user
namespace; in a pod with `hostUsers: false` it is not the owner). So the DaemonSet runs
`kube-rdma agent read-vpd` once, as an init container of user 0 with no capabilities, which
writes the keywords Data Direct matching needs (`V3`, `VU`) of every Mellanox function with a
VPD to a file in an emptyDir; the agent, user 65532, reads a function's VPD from sysfs when it
can and from that file when it cannot.

The file (JSON): `{"version": 1, "functions": {BDF: {"V3": ..., "VU": ...}}, "unreadable":
{BDF: why}}`; on a node without a ConnectX-8 Data Direct function both are empty, since
nothing reads a VPD there.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.attributes import read_attribute
from agent.vpd import VpdError, read_only_keywords, read_vpd

VERSION = 1
KEYWORDS = ("V3", "VU")
"""What Data Direct matching reads (agent/data_direct.py)."""
MELLANOX = "0x15b3"
DATA_DIRECT = "0x2100"
FIX = (
    "run `kube-rdma agent read-vpd` as user 0 in an init container and give the agent its file "
    "with --vpd-file (manifests/agent/daemonset.yaml does), or run the agent as root"
)


class VpdUnreadable(Exception):
    """A function's VPD could be read neither from sysfs nor from the file; the message says
    why and what to do."""


class KeywordsFileError(ValueError):
    """The keywords file cannot be used; the message names it and says why."""


@dataclass(frozen=True)
class KeywordsFile:
    path: Path
    functions: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    unreadable: Mapping[str, str] = field(default_factory=dict)


def data_direct_present(sysfs_root: Path) -> list[Path]:
    """The ConnectX-8 Data Direct functions (15b3:2100) of the node, by PCI ID."""
    devices = sysfs_root / "bus" / "pci" / "devices"
    return [
        devices / entry
        for entry in (sorted(os.listdir(devices)) if devices.is_dir() else [])
        if read_attribute(devices / entry / "vendor") == MELLANOX
        and read_attribute(devices / entry / "device") == DATA_DIRECT
    ]


Collected = tuple[dict[str, dict[str, str]], dict[str, str]]


def collect(sysfs_root: Path) -> Collected:
    """What `read-vpd` writes: the keywords of every Mellanox function with a VPD, on a node
    with a Data Direct function; why, for each one that could not be read."""
    functions: dict[str, dict[str, str]] = {}
    unreadable: dict[str, str] = {}
    if data_direct_present(sysfs_root):
        devices = sysfs_root / "bus" / "pci" / "devices"
        for entry in sorted(os.listdir(devices)):
            vpd = devices / entry / "vpd"
            if read_attribute(devices / entry / "vendor") != MELLANOX or not vpd.exists():
                continue
            try:
                found = read_only_keywords(read_vpd(vpd))
            except OSError as e:
                unreadable[entry] = f"cannot read {vpd}: {e.strerror}"
                continue
            except VpdError as e:
                unreadable[entry] = f"{vpd}: {e}"
                continue
            functions[entry] = {k: found[k] for k in KEYWORDS if k in found}
    return functions, unreadable


def render(collected: Collected) -> str:
    functions, unreadable = collected
    body = {"version": VERSION, "functions": functions, "unreadable": unreadable}
    return json.dumps(body, sort_keys=True) + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Readable by the agent's user (0644), never seen half-written."""
    partial = path.with_name(f".{path.name}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.chmod(partial, 0o644)
    os.replace(partial, path)


def load(path: Path) -> KeywordsFile:
    """The file `read-vpd` wrote; KeywordsFileError saying what is wrong with it."""
    try:
        body = json.loads(path.read_text())
    except OSError as e:
        raise KeywordsFileError(f"{path}: cannot read: {e.strerror}") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KeywordsFileError(
            f"{path}: not JSON ({e}); `kube-rdma agent read-vpd` writes it"
        ) from e
    if not isinstance(body, dict) or body.get("version") != VERSION:
        raise KeywordsFileError(
            f"{path}: not a version {VERSION} keywords file; write it with the same kube-rdma "
            "image as the agent (`kube-rdma agent read-vpd`)"
        )
    functions, unreadable = body.get("functions"), body.get("unreadable")
    if not isinstance(functions, dict) or not isinstance(unreadable, dict):
        raise KeywordsFileError(f"{path}: `functions` and `unreadable` must be objects")
    keywords = {str(a): _strings(k) for a, k in functions.items()}
    if None in keywords.values():
        raise KeywordsFileError(f"{path}: `functions` must map PCI addresses to keywords")
    return KeywordsFile(
        path,
        {a: k for a, k in keywords.items() if k is not None},
        {str(a): str(why) for a, why in unreadable.items()},
    )


def _strings(value: object) -> dict[str, str] | None:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return None
    return {str(k): v for k, v in value.items()}


class VpdReader:
    """A function's VPD keywords: from sysfs when this process can read it, else from the
    keywords file (`file`), else VpdUnreadable saying why and what to do."""

    def __init__(self, file: KeywordsFile | None = None, file_problem: str = "") -> None:
        self.file = file
        self.file_problem = file_problem
        """Why a --vpd-file given could not be loaded ("" when none was given or it loaded)."""

    def keywords(self, function: Path) -> dict[str, str]:
        vpd = function / "vpd"
        try:
            data = read_vpd(vpd)
        except OSError as e:
            hint = self.file is None and not self.file_problem
            return self._from_file(function.name, unreadable_message(vpd, e, hint))
        try:
            return read_only_keywords(data)
        except VpdError as e:
            raise VpdError(f"{vpd}: {e}") from e

    def _from_file(self, address: str, sysfs_problem: str) -> dict[str, str]:
        if self.file_problem:
            raise VpdUnreadable(f"{sysfs_problem}, and {self.file_problem}")
        if self.file is None:
            raise VpdUnreadable(sysfs_problem)
        found = self.file.functions.get(address)
        if found is not None:
            return dict(found)
        why = self.file.unreadable.get(address)
        if why is not None:
            raise VpdUnreadable(f"{sysfs_problem}, nor could read-vpd: {why}")
        raise VpdUnreadable(
            f"{sysfs_problem}, and {self.file.path} has no entry for it (a function that "
            "appeared after the pod started: restart the agent's pod)"
        )


def describe_source(sysfs_root: Path, reader: VpdReader) -> tuple[int, str]:
    """Where this process reads VPDs from, as a log level and a line for the start-up log."""
    functions = data_direct_present(sysfs_root)
    if not functions:
        return logging.INFO, "no ConnectX-8 Data Direct function on this node: no VPD is read"
    found = f"{len(functions)} ConnectX-8 Data Direct functions"
    try:
        read_vpd(functions[0] / "vpd")
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM):  # that function's own trouble: a scan says
            return logging.INFO, f"{found}: VPDs read from sysfs"
        cannot = f"{found}; this process cannot read VPD files ({e.strerror})"
        if reader.file is not None:
            return logging.INFO, f"{cannot}: their keywords come from {reader.file.path}"
        why = reader.file_problem or "no --vpd-file was given"
        return logging.WARNING, (
            f"{cannot} and {why}: their NICs pair with GPUs through the NICs' own functions, "
            f"which is wrong on these trays; {FIX}"
        )
    return logging.INFO, f"{found}: VPDs read from sysfs"


def unreadable_message(path: Path, error: OSError, hint: bool = True) -> str:
    root_only = error.errno in (errno.EACCES, errno.EPERM)
    fix = f" (VPD files are root's: {FIX}; docs/agent.md)" if root_only and hint else ""
    return f"cannot read {path}: {error.strerror}{fix}"
