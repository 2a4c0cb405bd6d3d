"""`kube-rdma agent read-vpd`, the init container that reads VPDs as user 0 for the agent, and
the agent's side: where it reads VPDs from.

It runs once per pod start, before the agent (agent/vpd_keywords.py says why and what it
writes). A VPD it cannot read is recorded in the file and logged, never a failure: the pod must
start either way, and the agent reports the NICs it then cannot pair through their Data Direct
functions. Only a file it cannot write (no writable volume at --out) exits 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from agent.vpd_keywords import (
    KeywordsFileError,
    VpdReader,
    collect,
    describe_source,
    load,
    render,
    write_atomically,
)

log = logging.getLogger("kube_rdma.agent")


def run_read_vpd(args: argparse.Namespace) -> int:
    if not args.sysfs_root.is_dir():
        print(
            f"kube-rdma agent read-vpd: --sysfs-root {args.sysfs_root} is not a directory; "
            "mount the host's /sys there",
            file=sys.stderr,
        )
        return 2
    functions, unreadable = collect(args.sysfs_root)
    try:
        write_atomically(args.out, render((functions, unreadable)))
    except OSError as e:
        print(
            f"kube-rdma agent read-vpd: cannot write {args.out}: {e.strerror}; mount a writable "
            "emptyDir there (manifests/agent/daemonset.yaml)",
            file=sys.stderr,
        )
        return 2
    for address, why in unreadable.items():
        log.warning("read-vpd: %s: %s", address, why)
    log.info(
        "read-vpd: wrote the VPD keywords of %d functions to %s (%d unreadable)",
        len(functions),
        args.out,
        len(unreadable),
    )
    return 0


def vpd_reader(sysfs_root: Path, vpd_file: Path | None, quiet: bool = False) -> VpdReader:
    """For `agent run` and `inspect`: VPDs from sysfs, else from `vpd_file`; logs once which
    (`quiet`: only when neither can be read on a node that needs them, and what to do)."""
    reader = VpdReader()
    if vpd_file is not None:
        try:
            reader = VpdReader(load(vpd_file))
        except KeywordsFileError as e:
            reader = VpdReader(file_problem=str(e))
    level, message = describe_source(sysfs_root, reader)
    if level > logging.INFO or not quiet:
        log.log(level, "vpd: %s", message)
    return reader
