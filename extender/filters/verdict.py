"""A filter's verdict on one node: pass, fail for now (capacity that may free up), or fail whatever
is freed (preemption cannot help)."""

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
