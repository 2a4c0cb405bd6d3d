"""Sizing the shared /dev/shm from the selected containers' memory limits."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.profiles import Shm
from webhook.shm import shm_size

GI, MI = 1 << 30, 1 << 20


def container(memory: str | None) -> dict[str, Any]:
    limits = {"memory": memory} if memory else {}
    return {"name": "c", "resources": {"limits": limits}}


CASES = [
    ("half-of-limit", ["200Gi"], Shm(), 100 * GI, []),
    (
        "ceiling",
        ["1600Gi"],
        Shm(),
        256 * GI,
        ["kube-rdma: /dev/shm is 256Gi, set by shm.max instead of 0.5 of the 1600Gi memory limit"],
    ),
    (
        "floor",
        ["1500Mi"],
        Shm(),
        1 * GI,
        ["kube-rdma: /dev/shm is 1Gi, set by shm.min instead of 0.5 of the 1500Mi memory limit"],
    ),
    (
        "floor-never-above-the-limit",
        ["512Mi"],
        Shm(),
        512 * MI,
        [
            "kube-rdma: /dev/shm is 512Mi, set by the memory limit instead of 0.5 of the 512Mi "
            "memory limit"
        ],
    ),
    ("smallest-limit-of-several", ["64Gi", "8Gi", None], Shm(), 4 * GI, []),
    ("rounded-down-to-mib", ["1000000001"], Shm(min=1 * MI), 476 * MI, []),
    (
        "no-limit-fallback",
        [None],
        Shm(),
        16 * GI,
        [
            "kube-rdma: no memory limit set, so /dev/shm gets the fallback size 16Gi; set a "
            "memory limit to size it from that"
        ],
    ),
    ("fixed-size", ["1Gi"], Shm(size=64 * GI), 64 * GI, []),
    ("fixed-size-rounded", [None], Shm(size=10**9), 953 * MI, []),
]


@pytest.mark.parametrize(
    ("memory", "shm", "size", "warnings"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_shm_size(memory: list[str | None], shm: Shm, size: int, warnings: list[str]) -> None:
    got: list[str] = []
    assert shm_size([container(m) for m in memory], shm, got) == size
    assert got == warnings
