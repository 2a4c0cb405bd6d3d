"""Waits and preemption per class of job: its priority and its gang size.

One starving gang is invisible in a p95 over hundreds of jobs, and a gang that never placed is
invisible even in a maximum over the placed ones. So every job counts: a placed job at its wait
(arrival to all its pods first bound), a job still waiting at the end at its wait so far,
flagged as unplaced; and the jobs are split by priority and by gang size (1, 2-8, 9-64, 65+
pods), each class with its own p50, p95 and max. A gang counts as left partial by preemption
when kube-scheduler's preemption took some of its bound members and the others stayed bound for
longer than `TRANSIENT`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesim.scheduler import GangKey, JobState

SIZES = ((1, 1, "1"), (2, 8, "2-8"), (9, 64, "9-64"), (65, None, "65+"))
TRANSIENT = 1.0
"""Seconds a gang may be left partly bound by preemption without counting: the time the
extender takes to tear down the rest of a gang kube-scheduler broke."""


def size_class(members: int) -> str:
    for low, high, name in SIZES:
        if members >= low and (high is None or members <= high):
            return name
    return SIZES[0][2]


def wait(state: JobState, start: float, end: float) -> tuple[float, bool]:
    """(seconds from arrival to placed, or to `end` when never placed; placed or not)."""
    arrived = start + state.job.arrival
    if state.first_started is not None:
        return state.first_started - arrived, True
    return end - arrived, False


def quantiles(waits: list[float]) -> dict[str, float | None]:
    """p50, p95 (nearest rank, as the report has always taken them) and max."""
    ordered = sorted(waits)
    if not ordered:
        return {"p50": None, "p95": None, "max": None}

    def rank(q: float) -> float:
        return round(ordered[min(int(q * len(ordered)), len(ordered) - 1)], 3)

    return {"p50": rank(0.5), "p95": rank(0.95), "max": round(ordered[-1], 3)}


def classes(
    states: Iterable[JobState], start: float, end: float, held: Mapping[GangKey, float]
) -> list[dict[str, Any]]:
    """One entry per (priority, size class) that has jobs: highest priority first, then by
    size."""
    grouped: dict[tuple[int, str], list[JobState]] = {}
    for state in states:
        grouped.setdefault((state.job.priority, size_class(state.job.members)), []).append(state)
    order = [name for *_, name in SIZES]
    found = []
    for (priority, size), members in sorted(
        grouped.items(), key=lambda item: (-item[0][0], order.index(item[0][1]))
    ):
        found.append({"priority": priority, "size": size, **summary(members, start, end, held)})
    return found


def summary(
    states: list[JobState], start: float, end: float, held: Mapping[GangKey, float]
) -> dict[str, Any]:
    """What one class (or the whole workload) waited and lost."""
    waits = [wait(s, start, end) for s in states]
    return {
        "jobs": len(states),
        "unplaced": sum(not placed for _, placed in waits),
        "time_to_place_seconds": quantiles([seconds for seconds, _ in waits]),
        "preempted_pods": sum(s.disruptions for s in states),
        "gpu_hours_lost": round(sum(s.lost_gpu_seconds for s in states) / 3600, 3),
        "partial_gangs_by_preemption": sum(
            s.partial_by_preemption(end, TRANSIENT) > 0 for s in states
        ),
        "held_hours": round(
            sum(held.get((s.job.namespace, s.job.name), 0.0) for s in states) / 3600, 3
        ),
    }
