"""Metrics of shared clusters, read from the scheduler's state at each scrape: gangs waiting
and for how long, members at the bind barrier, the holds in force, the preemptions and
evictions made, the evictions refused (the extender's eviction budget,
PodDisruptionBudgets, a gang's backoff), and the members' nominations written."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from extender.preemption.limits import BACKOFF, DISRUPTION_BUDGET, EVICTION_BUDGET
from extender.scheduling import Scheduler

EVENT_REASONS = ("Preempted", "GangBroken")
REFUSAL_REASONS = (EVICTION_BUDGET, DISRUPTION_BUDGET, BACKOFF)


class ContentionCollector(Collector):
    def __init__(self, scheduler: Scheduler, clock: Callable[[], float]) -> None:
        self._scheduler = scheduler
        self._clock = clock

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        scheduler, now = self._scheduler, self._clock()
        waiting = list(scheduler.contention.waiting.values())
        yield GaugeMetricFamily(
            "kube_rdma_gangs_waiting",
            "Gangs filtered and not planned yet (no room for them whole).",
            value=len(waiting),
        )
        longest = GaugeMetricFamily(
            "kube_rdma_gang_longest_wait_seconds",
            "The longest wait of a gang not planned yet, by priority.",
            labels=["priority"],
        )
        by_priority: dict[int, float] = {}
        for entry in waiting:
            wait = now - entry.since
            by_priority[entry.priority] = max(by_priority.get(entry.priority, 0.0), wait)
        for priority, wait in sorted(by_priority.items()):
            longest.add_metric([str(priority)], wait)
        yield longest
        at_barrier = [p for p in scheduler.planner.plans.values() if not p.opened]
        yield GaugeMetricFamily(
            "kube_rdma_gang_members_at_barrier",
            "Members waiting at the bind barrier for the rest of their gang (their bind "
            "requests waiting, or returned and kept in place).",
            value=sum(len(p.arrivals) for p in at_barrier),
        )
        holds = list(scheduler.holds)
        yield GaugeMetricFamily(
            "kube_rdma_gang_holds", "Holds in force (nodes kept for a gang).", value=len(holds)
        )
        yield GaugeMetricFamily(
            "kube_rdma_gang_held_gpus",
            "GPUs on nodes held for gangs (draining or being preempted for).",
            value=sum(h.gpus for h in holds),
        )
        evictor = scheduler.evictor
        yield CounterMetricFamily(
            "kube_rdma_gang_preemptions",
            "Gang preemptions carried out (every dry run passed).",
            value=evictor.preemptions,
        )
        budget = evictor.budget
        evictions = CounterMetricFamily(
            "kube_rdma_gang_evictions",
            "Pods evicted by the extender (or deleted, with --delete-when-eviction-refused), "
            "by the event's reason: Preempted (a gang preemption), GangBroken (the rest of a "
            "gang that lost a member).",
            labels=["reason"],
        )
        for reason in sorted({*EVENT_REASONS, *budget.evictions}):
            evictions.add_metric([reason], budget.evictions[reason])
        yield evictions
        refusals = CounterMetricFamily(
            "kube_rdma_eviction_refusals",
            "Evictions the extender did not make, by reason: eviction-budget (its own "
            "--eviction-budget had no room), disruption-budget (a PodDisruptionBudget "
            "refused), backoff (a gang's preemption deferred by its backoff).",
            labels=["reason"],
        )
        for reason in sorted({*REFUSAL_REASONS, *budget.refusals}):
            refusals.add_metric([reason], budget.refusals[reason])
        yield refusals
        yield GaugeMetricFamily(
            "kube_rdma_eviction_budget_remaining",
            "Evictions the extender may still make in the current minute (--eviction-budget).",
            value=budget.left(),
        )
        nominator = scheduler.planner.nominator
        nominations = CounterMetricFamily(
            "kube_rdma_gang_nominations",
            "Gang members' status.nominatedNodeName writes (--nominate-members; none without "
            "it), by result: written, or failed (the apiserver refused: the pod gone or "
            "replaced).",
            labels=["result"],
        )
        nominations.add_metric(["written"], nominator.written if nominator else 0)
        nominations.add_metric(["failed"], nominator.failed if nominator else 0)
        yield nominations
