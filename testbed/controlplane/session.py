"""The whole e2e set-up in one context manager, for the tests and for bench/controlplane.py."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from testbed.controlplane import crds
from testbed.controlplane.binaries import ensure_binaries
from testbed.controlplane.cluster import ControlPlane
from testbed.controlplane.components import Stack
from testbed.controlplane.objects import add_nodes, cluster_nodes


@contextlib.contextmanager
def running(kept: Path | None = None) -> Iterator[Stack]:
    """The binaries built or reused, the control plane started in a temporary folder (in `kept`,
    which must be empty, and stays with every process's log and the audit log), the cluster's
    Nodes and workload CRDs created, and kube-rdma started beside it. Everything stops on exit."""
    binaries = ensure_binaries()
    with contextlib.ExitStack() as cleanup:
        if kept is not None:
            kept.mkdir(parents=True, exist_ok=True)
            if any(kept.iterdir()):
                raise ValueError(f"{kept} is not empty: give an empty or new folder")
            folder = kept
        else:
            made = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="kube-rdma-e2e-"))
            folder = Path(made)
        plane = ControlPlane(binaries, folder)
        cleanup.callback(plane.stop)
        plane.start()
        add_nodes(plane.admin, cluster_nodes())
        crds.install(plane.admin)
        stack = Stack(plane)
        cleanup.callback(stack.stop)
        yield stack.start()
