"""Filters: one module per criterion, each `check(pod, node, rails) -> Verdict`.

A verdict that fails says why in words an admin can act on, and whether the failure can go away
by freeing capacity (FailedNodes, which preemption may fix) or not (FailedAndUnresolvableNodes:
no RDMA hardware, the wrong link layer, too few rails at all, a rail down).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from extender.cluster.model import NodeInfo
from extender.pairing import Rails
from extender.podview import PodView


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""
    resolvable: bool = True


PASS = Verdict(True)


def fail(reason: str) -> Verdict:
    """Fails for now: capacity in use that may free up."""
    return Verdict(False, reason, resolvable=True)


def never(reason: str) -> Verdict:
    """Fails whatever is freed: preemption cannot help."""
    return Verdict(False, reason, resolvable=False)


Filter = Callable[[PodView, NodeInfo, "Rails | None"], Verdict]


def registry() -> list[tuple[str, Filter]]:
    """The filters in the order they run; the first failure is the node's verdict."""
    from extender.filters import affinity, rdma

    return [("rdma", rdma.check), ("affinity", affinity.check)]
