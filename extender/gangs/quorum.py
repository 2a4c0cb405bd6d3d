"""Whether a gang has earned its power: its declared members exist.

A gang's size is whatever its pods declare (`kube-rdma.io/gang-size`, a PodGroup's minMember,
Kueue's or Koordinator's annotations), and a plan, a hold or a preemption acts for the whole
declared size. So a gang is planned, holds nodes or preempts only once its members exist as
pods in the cache (pending, or bound by this extender and still running), as scheduler-plugins'
coscheduling PreFilter makes a member wait until its PodGroup's minMember pods exist. A gang
read off its owning workload (a PyTorchJob's replicas, a JobSet's replicatedJobs, ...:
extender/gangs/ownership.py) is vouched for by that workload: its controller creates every
member, so its members need not all exist yet. Until then each member fails as unresolvable,
`gang team-a/llama: 1 of 8 members exist; waiting for the rest`. A gang kube-scheduler holds
itself (its GangScheduling plugin, extender/gangs/identity.py `held`) is not made to wait a
second time: the plugin's PreEnqueue sends no member before minCount pods exist, and the
extender's cache may lag behind kube-scheduler's.

No gang may declare more than `limit` members (`--max-gang-size`), vouched or not: a size
beyond it is refused with the numbers.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from extender.cluster.model import Cluster
from extender.gangs.identity import Gang, Singleton
from kube_rdma.core.objects import Json

MAX_GANG_SIZE = 4096
"""The largest gang by default: 4,096 pods is 32,768 GPUs at 8 a pod, twice the largest
training job published (Llama 3 405B, 16,384 H100s), and four times the 1,024-member gangs the
bind barrier is measured with (docs/PERFORMANCE.md)."""
FRESH_SECONDS = 1.0
"""How long a count of the pending pods is reused while the cache does not change."""


@dataclass(frozen=True)
class Presence:
    """How many of a gang's declared members exist."""

    gang: Gang
    pending: int
    bound: int
    limit: int

    @property
    def exist(self) -> int:
        return self.pending + self.bound

    @property
    def vouched(self) -> bool:
        return self.gang.vouched

    def refusal(self) -> str | None:
        """Why the gang may not act (plan, hold, preempt) now; None when it may."""
        gang = self.gang
        if gang.refusal:
            return gang.refusal
        if gang.size > self.limit:
            return (
                f"gang {gang} declares {gang.size} members, more than the extender allows "
                f"({self.limit}, --max-gang-size); it is never placed"
            )
        if self.vouched or gang.held or self.exist >= gang.size:
            return None
        return f"gang {gang}: {self.exist} of {gang.size} members exist; waiting for the rest"

    def summary(self) -> Json:
        """What explain shows: `{"exist": 1, "declared": 8, "vouched": false}`."""
        return {"exist": self.exist, "declared": self.gang.size, "vouched": self.vouched}


class Quorum:
    def __init__(
        self,
        cluster: Cluster,
        gang_of: Callable[[Json], Gang | Singleton],
        limit: int = MAX_GANG_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cluster = cluster
        self._gang_of = gang_of
        self.limit = limit
        self._clock = clock
        self._counted: tuple[int, float, Counter[tuple[str, str]]] | None = None

    def presence(self, gang: Gang, bound: int) -> Presence:
        """`bound`: the gang's members bound and still running."""
        return Presence(gang, self._pending()[gang.key], bound, self.limit)

    def _pending(self) -> Counter[tuple[str, str]]:
        """Pending pods per gang, counted once per change of the cache (and at most
        FRESH_SECONDS old, as a PodGroup or an owner read later changes pods' gangs)."""
        cluster, now = self._cluster, self._clock()
        found = self._counted
        if found is not None and found[0] == cluster.generation and now - found[1] < FRESH_SECONDS:
            return found[2]
        counts: Counter[tuple[str, str]] = Counter()
        for key in list(cluster.pending):
            pod = cluster.pod(*key)
            if pod is None:
                continue
            gang = self._gang_of(pod)
            if isinstance(gang, Gang):
                counts[gang.key] += 1
        self._counted = (cluster.generation, now, counts)
        return counts
