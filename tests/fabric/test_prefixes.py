"""Launchers' and log collectors' prefixes, taken off every line before it is read."""

from __future__ import annotations

import pytest

from fabric.prefixes import strip

NCCL = "gpu-1:4123:4213 [0] NCCL INFO Using network IB"
ROW = "     8388608       2097152     float     sum      -1    42.71  196.40  343.70      0"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"[1,0]<stdout>:{NCCL}", NCCL),  # Open MPI 4 --tag-output
        (f"[1,12]<stderr>:{NCCL}", NCCL),
        (f"[prterun-login-1-4821@1,0]<stdout>: {NCCL}", NCCL),  # Open MPI 5 / PRRTE
        (f"[1,0][gpu-1:4123]<stdout>:{NCCL}", NCCL),
        (f"Mon Nov 30 09:14:01 2026[1,0]<stdout>:{NCCL}", NCCL),  # --timestamp-output
        (f"Tue Dec  1 09:14:01 2026: {NCCL}", NCCL),
        (f"[2026-11-30 09:14:01] {NCCL}", NCCL),  # NCCL's own WARN stamp, a shipper's
        (f"2026-11-30 09:14:01,118: {NCCL}", NCCL),
        (f"[default0]:{NCCL}", NCCL),  # torchrun --tee 3
        (f"[trainer3]:{NCCL}", NCCL),
        (f"worker-1: {NCCL}", NCCL),  # pdsh, DeepSpeed
        (f"2026-11-30T09:14:01.118273645Z {NCCL}", NCCL),  # kubectl logs --timestamps
        (f"2026-11-30T09:14:01+01:00 {NCCL}", NCCL),
        (f"[pod/llama-worker-0/pytorch] {NCCL}", NCCL),  # kubectl logs --prefix
        (f"[pod/llama-worker-0/pytorch] 2026-11-30T09:14:01.118273645Z [1,0]<stdout>:{NCCL}", NCCL),
        # The space PRRTE puts after its tag cannot be told from the row's own first one.
        (f"node-1: [1,0]<stdout>:{ROW}", ROW[1:]),
        (NCCL, NCCL),
        (ROW, ROW),
        ("#  Rank  0 Group  0 Pid   4123 on gpu-1 device  0 [0x18] NVIDIA H100", None),
        ("# Out of bounds values : 0 OK", None),
        ("NCCL version 2.9.6+cuda11.2", None),
    ],
)
def test_prefixes_are_taken_off_and_nothing_else(line: str, expected: str | None) -> None:
    assert strip(line) == (line if expected is None else expected)
