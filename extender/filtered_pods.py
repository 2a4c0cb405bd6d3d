"""The pods `/filter` received that the cluster cache did not hold yet, kept for the bind of the
same scheduling cycle.

kube-scheduler's own informer can deliver a new pod, and its cycle reach `/bind`, before the
extender's watch has delivered that pod. The filter request carries the whole Pod
(ExtenderArgs.Pod, k8s.io/kube-scheduler/extender/v1/types.go) but the bind request only its
name, namespace and UID (ExtenderBindingArgs), so the bind would find nothing to read the pod's
requests and gang from. The filter's copy fills that gap.

Kept by UID, trimmed as the cache trims pods, for `ttl` seconds and at most `capacity` of them,
oldest dropped first: a cycle's bind follows its filter within kube-scheduler's extender
timeouts, and a pod the watch has delivered is read from the cache instead.

A gang member is different: its gang's plan and bind barrier count the members the cache holds,
so its bind first waits, briefly, for the watch to deliver the pod (`until_cached`).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from extender.cluster.trim import trim_pod
from kube_rdma.core.objects import Json

TTL_SECONDS = 120.0
"""Longer than a cycle takes from filter to bind, gang barrier included (4 s by default)."""
CAPACITY = 4096
"""More pods than kube-scheduler filters in `TTL_SECONDS` before its watch catches up."""
WATCH_LAG_SECONDS = 0.5
"""How long a gang member's bind waits for the watch to deliver its pod: a watch lags by
milliseconds, and with the barrier's wait (4 s) the bind answers within kube-scheduler's 5 s."""
POLL_SECONDS = 0.01


@dataclass(frozen=True)
class _Entry:
    pod: Json
    expires: float


class FilteredPods:
    def __init__(
        self,
        ttl: float = TTL_SECONDS,
        capacity: int = CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl, self._capacity, self._clock = ttl, capacity, clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def remember(self, pod: Json) -> None:
        """Keep `pod` (as a filter request carries it) under its UID; a pod without one is
        not kept, since a bind names the pod by UID."""
        uid = (pod.get("metadata") or {}).get("uid")
        if not uid:
            return
        now = self._clock()
        self._expire(now)
        self._entries.pop(str(uid), None)
        self._entries[str(uid)] = _Entry(trim_pod(pod), now + self._ttl)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def get(self, namespace: str, name: str, uid: str) -> Json | None:
        """The pod of that UID, when a filter request carried it in the last `ttl` seconds under
        that namespace and name."""
        self._expire(self._clock())
        entry = self._entries.get(uid) if uid else None
        if entry is None:
            return None
        meta = entry.pod["metadata"]
        return entry.pod if (meta.get("namespace"), meta.get("name")) == (namespace, name) else None

    def find(self, namespace: str, name: str) -> Json | None:
        """The newest pod of that namespace and name a filter request carried in the last `ttl`
        seconds, whatever its UID."""
        self._expire(self._clock())
        for entry in reversed(self._entries.values()):
            meta = entry.pod["metadata"]
            if (meta.get("namespace"), meta.get("name")) == (namespace, name):
                return entry.pod
        return None

    def _expire(self, now: float) -> None:
        while self._entries:
            oldest = next(iter(self._entries.values()))
            if oldest.expires > now:
                return
            self._entries.popitem(last=False)


async def until_cached(cached: Callable[[], Json | None], seconds: float) -> bool:
    """Whether `cached()` finds the pod within `seconds` (the cache has no event to wait on,
    so it is looked at every `POLL_SECONDS`)."""
    try:
        async with asyncio.timeout(seconds):
            while cached() is None:  # noqa: ASYNC110 - the cache has no event to wait on
                await asyncio.sleep(POLL_SECONDS)
    except TimeoutError:
        return False
    return True
