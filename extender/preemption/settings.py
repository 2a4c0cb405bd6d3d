"""What contention (extender/preemption/contention.py) is configured with: when gangs hold,
whether and how far they preempt, and what bounds their evictions."""

from __future__ import annotations

from dataclasses import dataclass

from extender.gangs.quorum import MAX_GANG_SIZE
from extender.preemption.limits import BACKOFF_CAP, BACKOFF_SECONDS, EVICTIONS_PER_MINUTE


@dataclass(frozen=True)
class ContentionSettings:
    hold_after: float = 120.0
    """Seconds a gang waits without a plan before it holds a domain to drain. Two minutes is
    several of kube-scheduler's backoff cycles (at most 10 s each): a gang that arrived while
    the cluster was merely busy has been tried often enough by then; waiting longer only delays
    the drain, whose idle GPUs cost the same whenever it starts."""
    hold_share: float = 0.5
    """The most of the cluster's GPUs that holds may take together; the oldest waiting gang of
    the highest priority may go past it."""
    recheck: float = 5.0
    """Seconds between two decisions for the same gang."""
    preemption: bool = True
    """Whether gangs may preempt lower-priority pods (needs the eviction RBAC)."""
    scheduler_name: str = "rdma-scheduler"
    """The kube-scheduler profile whose pending pods are gangs waiting, from the pod cache
    (those kube-scheduler's in-tree filters find no node for never reach the extender's
    filter)."""
    broken_grace: float | None = None
    """Seconds a running gang may lack members before the rest is torn down; None: never."""
    max_gang_size: int = MAX_GANG_SIZE
    """The most members a gang may declare (extender/gangs/quorum.py)."""
    backoff: float = BACKOFF_SECONDS
    """Seconds before a gang that preempted and was not placed may preempt again, doubled at
    each further round, up to `backoff_cap`."""
    backoff_cap: float = BACKOFF_CAP
    eviction_budget: int = EVICTIONS_PER_MINUTE
    """Evictions the extender may make in any minute, cluster-wide."""
    delete_when_refused: bool = False
    """Delete a pod whose eviction a PodDisruptionBudget refused (off: it stays, and the
    preemption or teardown is given up)."""
    across_classes: tuple[str, ...] = ()
    """PriorityClasses whose gangs may preempt in other namespaces; with `across_namespaces`
    both empty, every gang may (kube-scheduler's rule for a pod)."""
    across_namespaces: tuple[str, ...] = ()
    """Namespaces whose gangs may preempt in other namespaces."""
