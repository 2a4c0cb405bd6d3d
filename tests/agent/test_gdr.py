"""The GPUDirect RDMA paths from what sysfs and /proc show: the files NCCL checks for peermem,
and the signs of dma-buf (the open kernel module, a kernel of 5.12 or newer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.gdr import gdr_paths
from kube_rdma.core.topology import Gdr
from testbed.builders.sysfs_tree import OPEN_MODULE, PROPRIETARY_MODULE, driver_proc

# The shape an H200 node's driver writes (a distribution build of the open module).
OPEN_ON_H200 = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  (builder@)"
)

# (case, /proc/driver/nvidia/version's first line or None, kernel release, whether dma-buf)
DMABUF_CASES: list[tuple[str, str | None, str, bool]] = [
    ("open-module-new-kernel", OPEN_MODULE, "6.8.0-45-generic", True),
    ("open-module-custom-kernel", OPEN_ON_H200, "6.18.44-fc-v657-gpu", True),
    ("open-module-5.12", OPEN_MODULE, "5.12.0", True),
    ("open-module-rhel9", OPEN_MODULE, "5.14.0-427.13.1.el9_4.x86_64", True),
    ("open-module-old-kernel", OPEN_MODULE, "5.4.0-150-generic", False),
    ("open-module-rhel8", OPEN_MODULE, "4.18.0-513.5.1.el8_9.x86_64", False),
    ("proprietary-module", PROPRIETARY_MODULE, "6.8.0-45-generic", False),
    ("no-driver", None, "6.8.0-45-generic", False),
    ("unknown-kernel", OPEN_MODULE, "unknown", False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("driver", "release", "dmabuf"),
    [c[1:] for c in DMABUF_CASES],
    ids=[c[0] for c in DMABUF_CASES],
)
def test_dmabuf_signs(tmp_path: Path, driver: str | None, release: str, dmabuf: bool) -> None:
    proc = driver_proc(tmp_path / "proc", driver, release)
    assert gdr_paths(tmp_path / "sys", proc) == Gdr(peermem=False, dmabuf=dmabuf)


@pytest.mark.parametrize(("taint", "dmabuf"), [("O", True), ("OE", True), ("PO", False)])
def test_the_module_taint_tells_when_proc_does_not(
    tmp_path: Path, taint: str, dmabuf: bool
) -> None:
    proc = driver_proc(tmp_path / "proc", None, "6.8.0-45-generic")
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/taint").write_text(taint + "\n")
    assert gdr_paths(tmp_path / "sys", proc) == Gdr(peermem=False, dmabuf=dmabuf)


@pytest.mark.parametrize(
    "path",
    [
        "kernel/mm/memory_peers/nv_mem/version",
        "kernel/mm/memory_peers/nv_mem_nc/version",
        "module/nvidia_peermem/version",
    ],
)
def test_peermem_from_any_file_nccl_checks(tmp_path: Path, path: str) -> None:
    (tmp_path / "sys" / path).parent.mkdir(parents=True)
    (tmp_path / "sys" / path).write_text("1.3\n")
    assert gdr_paths(tmp_path / "sys", tmp_path / "proc") == Gdr(peermem=True, dmabuf=False)


def test_nothing_readable_is_no_path(tmp_path: Path) -> None:
    assert gdr_paths(tmp_path / "sys", tmp_path / "proc") == Gdr(peermem=False, dmabuf=False)
