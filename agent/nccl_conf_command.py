"""`kube-rdma nccl-conf`: read the pod's view, resolve, write the NCCL config file, pick the exit.

The thin edge around `agent.nccl_conf`: it reads sysfs (through the agent's own reader) and the
pod's /proc, writes the file (or prints it), and turns problems into the outcome the pod shows.
With `--on-missing fail` a problem is one line on stderr and in the termination log, and exit
1, so the pod stays in Init:Error with the reason; with `warn` the line is a warning and the file
holds what could be resolved (possibly nothing). The file's lines are logged to stderr as well.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.nccl_conf import Resolution, Wanted, resolve
from agent.pod_network import IpAddress, ProcError, read_pod_network
from agent.sysfs import SysfsError, find_rdma_devices

PREFIX = "kube-rdma nccl-conf"
OnMissing = Literal["fail", "warn"]


@dataclass(frozen=True)
class Request:
    sysfs_root: Path
    proc_root: Path
    addresses: tuple[IpAddress, ...] | None
    wanted: Wanted
    on_missing: OnMissing
    out: Path | None
    termination_log: Path
    settings: tuple[tuple[str, str], ...] = ()
    """Lines the file carries after the resolved ones (the profile's own NCCL settings)."""


def run(request: Request) -> int:
    resolution = resolve_pod(request)
    if resolution.problem and request.on_missing == "fail":
        return _fail(resolution.problem, request.termination_log)
    if resolution.problem:
        print(f"{PREFIX}: warning: {resolution.problem}", file=sys.stderr)
    lines = [*resolution.lines, *(f"{name}={value}" for name, value in request.settings)]
    try:
        _write("".join(f"{line}\n" for line in lines), request.out)
    except OSError as e:
        return _fail(f"cannot write {request.out}: {e.strerror}", request.termination_log)
    for line in lines:
        print(f"{PREFIX}: {line}", file=sys.stderr)
    return 0


def resolve_pod(request: Request) -> Resolution:
    """The resolution, or no lines and the one problem when an input cannot be read."""
    try:
        nics = [device.nic for device in find_rdma_devices(request.sysfs_root)]
        pod = read_pod_network(request.proc_root, request.wanted.family, request.addresses)
    except (SysfsError, ProcError) as e:
        return Resolution((), (str(e),))
    except OSError as e:
        return Resolution((), (f"{e.filename}: cannot read: {e.strerror}",))
    return resolve(nics, pod, request.wanted)


def _write(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)


def _fail(problem: str, termination_log: Path) -> int:
    line = f"{PREFIX}: {problem}"
    print(line, file=sys.stderr)
    with contextlib.suppress(OSError):  # outside a container: stderr has the line
        termination_log.write_text(line + "\n")
    return 1
