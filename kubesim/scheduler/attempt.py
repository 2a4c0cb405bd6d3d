"""What one scheduling cycle came to (`Attempt`), and what an open scheduler talks through."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Literal

from kubesim.scheduler.apiserver import ApiCalls
from kubesim.scheduler.binder import Binder
from kubesim.scheduler.extender_client import ExtenderClient
from kubesim.scheduler.informer import Informer
from kubesim.scheduler.pods import PodKey


@dataclass(frozen=True)
class Attempt:
    """One scheduling cycle."""

    pod: PodKey
    at: float
    outcome: Literal["assumed", "unschedulable", "error", "gone"]
    node: str | None = None
    message: str = ""
    sampled: int = 0
    """Feasible nodes the in-tree pass found (what /filter was sent)."""
    nominated: str | None = None
    """Unschedulable, but nominated to this node by preemption."""
    victims: tuple[PodKey, ...] = ()
    """The pods that preemption deleted for it."""


@dataclass(frozen=True)
class Connections:
    """What an open scheduler talks through; `exits` closes them."""

    exits: contextlib.AsyncExitStack
    apiserver: ApiCalls
    informer: Informer
    extender: ExtenderClient | None
    binder: Binder
