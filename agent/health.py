"""Port health across scans: a link that is up but keeps counting errors is not healthy.

A port is unhealthy while it is not ACTIVE/LinkUp, or while one of its judged error counters
grows faster than its rule allows (agent/error_rules.py: a rate over a window, so one flake does
not take the node out). It becomes healthy again only after `recover_after` clean scans in a row,
so a flapping link does not flap the node's readiness with it.

Each port keeps, per scan, how much each counter grew since the agent started; a window's growth
is the difference between now and the last scan at or before the window's start. A counter that
went down (a driver reload or a manual reset) is a new baseline: it adds nothing, so no rate is
ever negative. Time comes from `clock` (monotonic seconds), so tests can step it.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Callable, Mapping

from agent.error_rules import DEFAULT_ERROR_RULES, ErrorRules
from kube_rdma.core.topology import Nic, Port, Topology

PortKey = tuple[str, int]


class _Growth:
    """One port's counters over time: the growth of each since the first scan, per scan."""

    def __init__(self) -> None:
        self._times: list[float] = []
        self._totals: list[dict[str, int]] = []
        self._last: Mapping[str, int] = {}

    def record(self, now: float, counters: Mapping[str, int], keep_seconds: float) -> None:
        totals = dict(self._totals[-1]) if self._totals else {}
        for name, value in counters.items():
            grown = value - self._last.get(name, value)
            totals[name] = totals.get(name, 0) + max(grown, 0)
        self._last = dict(counters)
        self._times.append(now)
        self._totals.append(totals)
        drop = self._baseline(now - keep_seconds)
        del self._times[:drop], self._totals[:drop]

    def within(self, name: str, since: float) -> int:
        """How much `name` grew after `since` (after the first scan, if that is later)."""
        return self._totals[-1].get(name, 0) - self._totals[self._baseline(since)].get(name, 0)

    def covers(self, since: float) -> bool:
        return self._times[0] <= since

    def _baseline(self, since: float) -> int:
        """The last scan at or before `since`, or the first."""
        return max(bisect_right(self._times, since) - 1, 0)


class HealthTracker:
    def __init__(
        self,
        recover_after: int = 3,
        rules: ErrorRules = DEFAULT_ERROR_RULES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if recover_after < 1:
            raise ValueError("recover_after must be at least 1")
        self.recover_after = recover_after
        self._rules = rules
        self._clock = clock
        self._keep_seconds = max((rule.window_seconds for rule in rules.values()), default=0)
        self._growth: dict[PortKey, _Growth] = {}
        self._clean_scans: dict[PortKey, int] = {}

    def update(self, topology: Topology) -> Topology:
        """`topology` with each port's `healthy` judged against the previous scans, and its
        `error_rates` once a rule's window has passed."""
        now = self._clock()
        nics = tuple(
            nic.model_copy(update={"ports": tuple(self._judge(nic, p, now) for p in nic.ports)})
            for nic in topology.nics
        )
        return topology.model_copy(update={"nics": nics})

    def _judge(self, nic: Nic, port: Port, now: float) -> Port:
        key = (nic.name, port.port)
        growth = self._growth.setdefault(key, _Growth())
        growth.record(now, port.counters, self._keep_seconds)
        port = port.model_copy(update={"error_rates": self._rates(growth, port, now)})
        too_fast = any(
            growth.within(name, now - rule.window_seconds) > rule.allowance
            for name, rule in self._rules.items()
        )
        return self._with_hysteresis(key, port, healthy_now=port.healthy and not too_fast)

    def _rates(self, growth: _Growth, port: Port, now: float) -> dict[str, float] | None:
        """Errors per minute over each judged counter's window, for the windows that passed."""
        rates = {
            name: round(
                growth.within(name, now - rule.window_seconds) * 60 / rule.window_seconds, 3
            )
            for name, rule in self._rules.items()
            if name in port.counters and growth.covers(now - rule.window_seconds)
        }
        return rates or None

    def _with_hysteresis(self, key: PortKey, port: Port, healthy_now: bool) -> Port:
        if not healthy_now:
            self._clean_scans[key] = 0
            return port.model_copy(update={"healthy": False})
        if key not in self._clean_scans:
            return port
        self._clean_scans[key] += 1
        if self._clean_scans[key] >= self.recover_after:
            del self._clean_scans[key]
            return port
        return port.model_copy(update={"healthy": False})


def rdma_ready(topology: Topology) -> bool:
    """At least one RDMA port is ACTIVE and healthy."""
    return any(p.state == "ACTIVE" and p.healthy for nic in topology.nics for p in nic.ports)
