"""What bounds the extender's evictions, whatever decided them: a backoff per gang between two
preemptions, and a budget of evictions per minute for the whole cluster.

- **Backoff.** A gang that preempted and is still not placed (the room it freed was taken
  again, a member never came, its plan expired) may not preempt again before
  `base x 2^(rounds - 1)` seconds, at most `cap`: repeated rounds add evictions ever more
  slowly. A gang gone, or not back within `cap` of its backoff's end, starts afresh.
- **Budget.** At most `per_minute` evictions in any 60 seconds, counted over every eviction the
  extender makes (gang preemptions and gang teardowns). A preemption is made whole or not at
  all: it goes ahead only when all its evictions fit in what is left of the minute, and one
  larger than the whole budget never does (its refusal says so, with the numbers).

Each refusal is counted by reason, for the metrics (extender/contention_metrics.py).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable

WINDOW = 60.0
"""The budget's window, in seconds: the budget is evictions per minute."""

EVICTION_BUDGET = "eviction-budget"
"""Refusal reasons, as the metrics label them: the extender's own eviction budget..."""
DISRUPTION_BUDGET = "disruption-budget"
"""... a PodDisruptionBudget (the Eviction API answered 429) ..."""
BACKOFF = "backoff"
"""... and a gang's preemption deferred by its backoff."""


BACKOFF_SECONDS = 300.0
"""The first backoff: kube-scheduler's own longest wait for an unschedulable pod
(podMaxInUnschedulablePodsDuration, 5 minutes), more than a plan's life (--plan-timeout, 120 s)
plus a victim's default termination grace (30 s), so a round's room was lost for good before
the next round may begin."""
BACKOFF_CAP = 3600.0
"""The longest backoff: a gang that keeps losing its room preempts at most once an hour."""
EVICTIONS_PER_MINUTE = 64
"""The default eviction budget (docs/gangs.md says why)."""


class Backoff:
    def __init__(self, base: float, cap: float) -> None:
        self._base, self._cap = base, cap
        self._rounds: dict[Hashable, tuple[int, float]] = {}
        """gang -> preemptions made while it waited, and when the last was decided."""
        self._undo: dict[Hashable, tuple[int, float] | None] = {}

    def delay(self, rounds: int) -> float:
        """The wait after `rounds` preemptions (1: the first)."""
        return min(self._cap, self._base * 2.0 ** max(0, rounds - 1))

    def left(self, key: Hashable, now: float) -> float:
        """Seconds before the gang may preempt again; 0 when it may now."""
        found = self._rounds.get(key)
        if found is None:
            return 0.0
        rounds, at = found
        return max(0.0, at + self.delay(rounds) - now)

    def rounds(self, key: Hashable) -> int:
        found = self._rounds.get(key)
        return found[0] if found else 0

    def preempted(self, key: Hashable, now: float) -> None:
        self._undo[key] = self._rounds.get(key)
        rounds = self.rounds(key)
        self._rounds[key] = (rounds + 1, now)

    def undo(self, key: Hashable) -> None:
        """The last preemption was refused before any eviction: it does not count."""
        if key not in self._undo:
            return
        before = self._undo.pop(key)
        if before is None:
            self._rounds.pop(key, None)
        else:
            self._rounds[key] = before

    def prune(self, now: float) -> None:
        """Forget the gangs whose backoff ended more than `cap` ago (placed whole long since,
        or gone): they start afresh."""
        for key, (rounds, at) in list(self._rounds.items()):
            if now - at > self.delay(rounds) + self._cap:
                self.forget(key)

    def forget(self, key: Hashable) -> None:
        """The gang was placed whole, or is gone: it starts afresh."""
        self._rounds.pop(key, None)
        self._undo.pop(key, None)


class EvictionBudget:
    def __init__(self, per_minute: int, clock: Callable[[], float]) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._spent: deque[tuple[float, int]] = deque()
        self.refusals: Counter[str] = Counter()
        """Refusals, by reason (EVICTION_BUDGET, DISRUPTION_BUDGET, BACKOFF)."""
        self.evictions: Counter[str] = Counter()
        """Pods evicted (or deleted, where the admin allows it), by the event's reason."""

    def left(self) -> int:
        """Evictions the window has room for now."""
        now = self._clock()
        while self._spent and self._spent[0][0] <= now - WINDOW:
            self._spent.popleft()
        return max(0, self.per_minute - sum(n for _, n in self._spent))

    def take(self, count: int) -> str | None:
        """Take room for `count` evictions, all or none; why not when none."""
        left = self.left()
        if count <= left:
            if count:
                self._spent.append((self._clock(), count))
            return None
        self.refusals[EVICTION_BUDGET] += 1
        if count > self.per_minute:
            return (
                f"it would evict {count} pods, more than the extender's whole eviction budget "
                f"({self.per_minute} a minute, --eviction-budget)"
            )
        return (
            f"the extender's eviction budget has room for {left} more evictions this minute "
            f"(of {self.per_minute}, --eviction-budget), and it would evict {count}"
        )

    def give_back(self, count: int) -> None:
        """Evictions taken and not made (a preemption refused before it began)."""
        while count > 0 and self._spent:
            at, taken = self._spent.pop()
            if taken > count:
                self._spent.append((at, taken - count))
            count -= taken
