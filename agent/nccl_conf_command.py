"""`kube-rdma nccl-conf`: read the pod's view, resolve, write the NCCL config file, pick the exit.

The thin edge around `agent.nccl_conf`: it reads sysfs (through the agent's own reader) and the
pod's /proc, writes the file (or prints it), and turns problems into the outcome the pod shows.
With `--on-missing fail` a problem is one line on stderr and in the termination log, and exit
1, so the pod stays in Init:Error with the reason; with `warn` the line is a warning and the file
holds what could be resolved (possibly nothing). The file's lines are logged to stderr as well.

Where the pod's ResourceClaims describe its RDMA devices (DRA device metadata files, or a
ResourceClaim given as a file: agent/claim_devices.py), the HCAs, the addresses the GID index is
matched against and the socket interfaces come from them; today's discovery is the fallback when
they are absent. The file's first line, a comment, and the first log line say which was used.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.claim_conf import FromClaims, from_claims
from agent.claim_devices import METADATA_DIR, ClaimDataError, read_claim_devices
from agent.nccl_conf import Resolution, Wanted, resolve
from agent.pod_network import IpAddress, PodNetwork, ProcError, read_pod_network
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
    claim_data: tuple[Path, ...] | None = None
    """Files or directories of the pod's claim device data; None: the standard directory of
    DRA device metadata, where it exists."""


def run(request: Request) -> int:
    resolution = resolve_pod(request)
    if resolution.problem and request.on_missing == "fail":
        return _fail(resolution.problem, request.termination_log)
    if resolution.problem:
        print(f"{PREFIX}: warning: {resolution.problem}", file=sys.stderr)
    comment = [f"# {_comment(resolution.source)}"] if resolution.source else []
    lines = [*resolution.lines, *(f"{name}={value}" for name, value in request.settings)]
    try:
        _write("".join(f"{line}\n" for line in [*comment, *lines]), request.out)
    except OSError as e:
        return _fail(f"cannot write {request.out}: {e.strerror}", request.termination_log)
    for line in [resolution.source, *lines] if resolution.source else lines:
        print(f"{PREFIX}: {line}", file=sys.stderr)
    return 0


def resolve_pod(request: Request) -> Resolution:
    """The resolution, or no lines and the one problem when an input cannot be read."""
    paths = request.claim_data
    if paths is None:
        paths = (METADATA_DIR,) if METADATA_DIR.is_dir() else ()
    try:
        nics = [device.nic for device in find_rdma_devices(request.sysfs_root)]
        pod = read_pod_network(request.proc_root, request.wanted.family, request.addresses)
        devices = read_claim_devices(paths)
    except (SysfsError, ProcError, ClaimDataError) as e:
        return Resolution((), (str(e),))
    except OSError as e:
        return Resolution((), (f"{e.filename}: cannot read: {e.strerror}",))
    where = ", ".join(str(p) for p in paths) or str(METADATA_DIR)
    claims = from_claims(devices, nics)
    for note in claims.notes:
        print(f"{PREFIX}: {note}", file=sys.stderr)
    if not claims.nics:
        found = "no RDMA device in" if devices else "no device data at"
        return _with_source(
            resolve(nics, pod, request.wanted),
            f"discovered in the pod's network namespace ({found} {where})",
        )
    return _from_claims(claims, pod, request.wanted, where)


def _from_claims(claims: FromClaims, pod: PodNetwork, wanted: Wanted, where: str) -> Resolution:
    addresses = claims.addresses or pod.addresses
    network = PodNetwork(addresses, pod.default_interface)
    resolution = resolve(claims.nics, network, wanted, claims.interfaces)
    gid = "their addresses" if claims.addresses else "the pod's addresses"
    sockets = "their interfaces" if claims.interfaces else "the default route"
    return _with_source(
        resolution,
        f"HCAs from the pod's ResourceClaim devices ({', '.join(claims.devices)}; {where}), "
        f"GID index by {gid}, socket interfaces from {sockets}",
    )


def _with_source(resolution: Resolution, source: str) -> Resolution:
    return Resolution(resolution.lines, resolution.problems, source)


def _comment(source: str) -> str:
    """The source as an NCCL config comment: NCCL's reader takes any line with `=` as a
    setting (src/misc/param.cc setEnvFile), so the comment has none."""
    return f"kube-rdma nccl-conf: {source}".replace("=", ":")


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
