"""The variants side by side: a table for the terminal, and the JSON document."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.simulate.classes import SIZES
from kubesim.simulate.metrics import LEVELS

SIZE_ORDER = [name for *_, name in SIZES]

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
    ("jobs never placed", lambda v: str(v["jobs_unplaced"])),
    ("time to place p50", lambda v: _seconds(v["time_to_place_seconds"]["p50"])),
    ("time to place p95", lambda v: _seconds(v["time_to_place_seconds"]["p95"])),
    ("time to place max", lambda v: _seconds(v["time_to_place_seconds"]["max"])),
    ("pods preempted or evicted", lambda v: str(v["preemption"]["preempted_pods"])),
    ("GPU-hours lost to preemption", lambda v: f"{v['preemption']['gpu_hours_lost']:.2f}"),
    ("partial gangs by preemption", lambda v: str(v["preemption"]["partial_gangs"])),
    ("hours gangs were held", lambda v: f"{v['preemption']['held_hours']:.2f}"),
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


def _level_rows(variants: list[dict[str, Any]]) -> list[list[str]]:
    """Gangs inside one domain of each level the cluster's labels carry."""
    levels = dict.fromkeys(
        level for v in variants for level in v.get("gangs_in_one_domain_by_level", {})
    )
    return [
        [
            f"gangs in one {level}",
            *(
                f"{v['gangs_in_one_domain_by_level'].get(level, 0)} of {v['gangs_placed']}"
                for v in variants
            ),
        ]
        for level in levels
    ]


def _class_rows(variants: list[dict[str, Any]]) -> list[list[str]]:
    """Per priority and gang size: `p50 / p95 / max` of the waits, `(n unplaced)` after."""
    keys = sorted(
        {(c["priority"], c["size"]) for v in variants for c in v["classes"]},
        key=lambda k: (-k[0], SIZE_ORDER.index(k[1])),
    )
    rows = []
    for priority, size in keys:
        cells = [f"wait p50/p95/max, priority {priority}, {size} pods"]
        for variant in variants:
            found = [
                c for c in variant["classes"] if (c["priority"], c["size"]) == (priority, size)
            ]
            cells.append(_waits(found[0]) if found else "-")
        rows.append(cells)
    return rows


def _waits(entry: dict[str, Any]) -> str:
    times = entry["time_to_place_seconds"]
    text = " / ".join(_seconds(times[q]) for q in ("p50", "p95", "max"))
    return f"{text} ({entry['unplaced']} unplaced)" if entry["unplaced"] else text


def _dra_rows(variants: list[dict[str, Any]]) -> list[list[str]]:
    """Only for a workload with claim pods: how their claims stood when they were bound."""
    if not any("dra" in v for v in variants):
        return []
    rows = (
        ("DRA pods bound", "pods_bound"),
        ("DRA pods bound, claims reserved", "pods_bound_with_claims_reserved"),
        ("DRA pods bound unreserved (want 0)", "pods_bound_unreserved"),
        ("devices allocated twice (want 0)", "devices_double_allocated"),
    )
    return [[name, *(str(v.get("dra", {}).get(key, "-")) for v in variants)] for name, key in rows]


def table(document: dict[str, Any]) -> str:
    """The variants as columns, one metric per row, then the waits per class; then the reasons
    pods never fit."""
    variants = document["variants"]
    header = ["", *(v["name"] for v in variants)]
    rows = [header, *([name, *(show(v) for v in variants)] for name, show in ROWS)]
    rows += _level_rows(variants)
    rows += _class_rows(variants)
    rows += _dra_rows(variants)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [_summary(document)]
    lines += [f"warning: {w}" for w in document.get("warnings", [])]
    for row in rows:
        cells = [
            row[0].ljust(widths[0]),
            *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)),
        ]
        lines.append("  ".join(cells).rstrip())
    for variant in variants:
        for reason in variant["never_fit"]:
            lines.append(f"{variant['name']}: {reason['pods']} pods never fit: {reason['reason']}")
        for problem in variant.get("dra", {}).get("problems", []):
            lines.append(f"{variant['name']}: DRA: {problem}")
    return "\n".join(lines)


def _summary(document: dict[str, Any]) -> str:
    cluster, workload = document["cluster"], document["workload"]
    return (
        f"{cluster['nodes']} nodes, {cluster['gpus']} GPUs ({cluster['gpus_free']} free); "
        f"{workload['jobs']} jobs, {workload['pods']} pods, {workload['gangs']} gangs "
        f"({workload['source']})"
    )
