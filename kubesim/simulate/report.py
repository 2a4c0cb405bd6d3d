"""The variants side by side: a table for the terminal, and the JSON document."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.simulate.metrics import LEVELS

Row = tuple[str, Callable[[dict[str, Any]], str]]


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"


def _share(variant: dict[str, Any], level: str) -> str:
    counts = variant["gpu_nic_levels"]
    total = sum(counts.values())
    return f"{100 * counts[level] / total:.1f} %" if total else "-"


ROWS: tuple[Row, ...] = (
    ("jobs placed", lambda v: f"{v['jobs_placed']} of {v['jobs']}"),
    ("gangs placed", lambda v: f"{v['gangs_placed']} of {v['gangs']}"),
    ("partial gangs (> 1 s)", lambda v: str(v["partial_gangs"]["gangs"])),
    ("partial gangs at once", lambda v: str(v["partial_gangs"]["max_at_once"])),
    ("GPU-hours idle in partial gangs", lambda v: f"{v['partial_gangs']['idle_gpu_hours']:.2f}"),
    ("time to place p50", lambda v: _seconds(v["time_to_place_seconds"]["p50"])),
    ("time to place p95", lambda v: _seconds(v["time_to_place_seconds"]["p95"])),
    ("gangs in one leaf", lambda v: f"{v['gangs_in_one_domain']} of {v['gangs_placed']}"),
    *((f"GPUs at {level} NIC", lambda v, lv=level: _share(v, lv)) for level in LEVELS[:-1]),
    ("GPUs without a usable NIC", lambda v: _share(v, "none")),
    ("GPU utilisation, mean", lambda v: f"{100 * v['utilisation']['mean']:.1f} %"),
    ("pods that never fit", lambda v: str(sum(r["pods"] for r in v["never_fit"]))),
    (
        "simulated / wall time",
        lambda v: f"{v['simulated_hours']:.1f} h / {v['wall_seconds']:.1f} s",
    ),
)


def table(document: dict[str, Any]) -> str:
    """The variants as columns, one metric per row; then the reasons pods never fit."""
    variants = document["variants"]
    header = ["", *(v["name"] for v in variants)]
    rows = [header, *([name, *(show(v) for v in variants)] for name, show in ROWS)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [_summary(document)]
    for row in rows:
        cells = [
            row[0].ljust(widths[0]),
            *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)),
        ]
        lines.append("  ".join(cells).rstrip())
    for variant in variants:
        for reason in variant["never_fit"]:
            lines.append(f"{variant['name']}: {reason['pods']} pods never fit: {reason['reason']}")
    return "\n".join(lines)


def _summary(document: dict[str, Any]) -> str:
    cluster, workload = document["cluster"], document["workload"]
    return (
        f"{cluster['nodes']} nodes, {cluster['gpus']} GPUs ({cluster['gpus_free']} free); "
        f"{workload['jobs']} jobs, {workload['pods']} pods, {workload['gangs']} gangs "
        f"({workload['source']})"
    )
