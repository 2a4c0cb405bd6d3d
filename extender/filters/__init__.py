"""Filters: one module per criterion, each `check(pod, node, rails) -> Verdict`.

A verdict that fails says why in words an admin can act on, and whether the failure can go away
by freeing capacity (FailedNodes, which preemption may fix) or not (FailedAndUnresolvableNodes:
no RDMA hardware, the wrong link layer, too few rails at all, a rail down).
"""

from __future__ import annotations

from extender.filters import affinity, rdma
from extender.filters.verdict import PASS, Filter, Verdict, fail, never

__all__ = ["PASS", "Filter", "Verdict", "fail", "never", "registry"]


def registry() -> list[tuple[str, Filter]]:
    """The filters in the order they run; the first failure is the node's verdict."""
    return [("rdma", rdma.check), ("affinity", affinity.check)]
