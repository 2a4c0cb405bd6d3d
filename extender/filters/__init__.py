"""Filters: one module per criterion, each `check(pod, node, rails) -> Verdict`.

A verdict that fails says why in words an admin can act on, and whether the failure can go away
by freeing capacity (FailedNodes, which preemption may fix) or not (FailedAndUnresolvableNodes:
no RDMA hardware, the wrong link layer, too few rails at all, a rail down, no GPUDirect RDMA).
"""

from __future__ import annotations

from extender.filters import acceptance, affinity, dra, gdr, rdma
from extender.filters.verdict import PASS, Filter, Verdict, fail, never

__all__ = ["PASS", "Filter", "Verdict", "fail", "never", "registry"]


def registry(require_acceptance: bool = False) -> list[tuple[str, Filter]]:
    """The filters in the order they run; the first failure is the node's verdict. GPUDirect
    RDMA runs first: a node without it must be unresolvable even while it is busy, or
    kube-scheduler would preempt pods there for a pod that can never run on it; fabric acceptance,
    when required, runs before it for the same reason."""
    checks: list[tuple[str, Filter]] = (
        [("acceptance", acceptance.check)] if require_acceptance else []
    )
    return [
        *checks,
        ("gdr", gdr.check),
        ("dra-served", dra.served),
        ("rdma", rdma.check),
        ("dra", dra.check),
        ("affinity", affinity.check),
    ]
