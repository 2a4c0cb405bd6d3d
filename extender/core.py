"""The scheduler's core, built once, as scheduler-plugins' coscheduling.New builds its
PodGroupManager: each part is made in the order the parts depend on each other and given only
what it uses, so that no part reaches back for one built after it.

    requirements (the levels each gang is planned over)
    book (what plans hold) <- engine (reads it) <- holds
    freeing (what evictions free), eviction budget <- evictor (acts)
      <- contention (decides: waits, holds, preemption) <- broken-gang teardown
    quorum (whether a gang's members exist)
    planner (writes the book, fences each plan it holds) <- upkeep, bind barrier

The one answer that runs back is the evictor's: a preemption whose dry runs were refused is
told to contention, which decided it (`Core._refused`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from functools import partial

from extender.book.holds import Hold, HoldBook
from extender.book.records import MemoryRecords, PlanRecords
from extender.book.reservations import Reservations
from extender.cluster.devices import DraNames
from extender.cluster.disruptions import Disruptions, ModelDisruptions
from extender.cluster.nominations import Nominations
from extender.cluster.pods import PodKey
from extender.cluster.source import ClusterSource
from extender.engine import Engine
from extender.gangs.barrier import Barrier
from extender.gangs.fences import plan_fence
from extender.gangs.fitting import FitMeasure
from extender.gangs.identity import Gang, Singleton, gang_of
from extender.gangs.making import PlanMaker
from extender.gangs.nominating import Nominator
from extender.gangs.ownership import owner_gang
from extender.gangs.planner import GangSettings, Planner
from extender.gangs.quorum import Quorum
from extender.gangs.requirements import LevelSettings, Requirements
from extender.gangs.top_owner import top_owner
from extender.podview import PodView, pod_view
from extender.preemption.broken import BrokenGangs
from extender.preemption.contention import Contention, ContentionSettings
from extender.preemption.evictor import Evictor
from extender.preemption.freeing import Freeing
from extender.preemption.limits import EvictionBudget
from extender.upkeep import Upkeep, gang_key
from extender.weights import Weights
from kube_rdma.core.objects import Json

DEFAULT_CONTENTION = ContentionSettings()


class Core:
    """The parts of gang scheduling, and how a pod reads to them (its view, its gang)."""

    def __init__(
        self,
        source: ClusterSource,
        weights: Callable[[], Weights],
        gangs: GangSettings,
        resources: tuple[Sequence[str], Sequence[str]],
        bind_member: Callable[[PodKey, str, str], Awaitable[None]],
        records: PlanRecords | None = None,
        require_acceptance: bool = False,
        clock: Callable[[], float] = time.monotonic,
        contention: ContentionSettings = DEFAULT_CONTENTION,
        disruptions: Disruptions | None = None,
        nominations: Nominations | None = None,
    ) -> None:
        """`resources`: the GPU and the RDMA resource names. Without `disruptions` no gang
        preempts (holds still apply)."""
        cluster = source.cluster
        self._source = source
        self.cluster = cluster
        self._native_held = gangs.native_gang_scheduling != "off"
        self._resources = (tuple(resources[0]), tuple(resources[1]))
        self.records = records or MemoryRecords()
        levels = LevelSettings(gangs.domains, gangs.nvlink, gangs.topology)
        self.requirements = Requirements(cluster, levels, self._top_owner, self.waiting_members)
        self.book = Reservations(gangs.domains[0] if gangs.domains else None)
        self.engine = Engine(cluster, weights, self.book, require_acceptance)
        self.holds = HoldBook(self.records)
        if disruptions is None:
            contention = replace(contention, preemption=False)
        self.freeing = Freeing(cluster, DraNames(gpu=self._resources[0][0]))
        self.budget = EvictionBudget(contention.eviction_budget, clock)
        self.evictor = Evictor(
            cluster,
            disruptions or ModelDisruptions(cluster),
            self._refused,
            self.budget,
            contention.delete_when_refused,
        )
        self.contention = Contention(
            cluster,
            self.engine,
            self.book,
            self.holds,
            self.gang,
            self.requirements,
            contention,
            clock,
            self.evictor.start,
            self.freeing,
            self._resources[0],
            self.budget,
        )
        self.broken = BrokenGangs(
            contention.broken_grace, clock, self.gang, self.evictor.tear_down_gang
        )
        self.planner = Planner(
            cluster,
            self.engine,
            self.book,
            gangs,
            clock,
            self.records,
            self.holds,
            self.contention.priority,
            self.contention.ahead,
            self.waiting_members,
            self._top_owner,
            requirements=self.requirements,
            fence_of=partial(plan_fence, cluster, self.requirements),
            quorum=Quorum(cluster, self.gang, contention.max_gang_size, clock),
            nominator=None if nominations is None else Nominator(cluster, nominations),
        )
        self.upkeep = Upkeep(
            cluster,
            self.gang,
            self.view,
            self.planner,
            self.contention,
            self.holds,
            self.evictor,
            self.broken,
            self.records,
        )
        self.barrier = Barrier(self.planner, cluster, gangs.barrier_timeout, bind_member)
        measure = FitMeasure(
            cluster, self.engine, self.book, self.holds, self.contention.priority, self.requirements
        )
        self.dry_maker = PlanMaker(
            cluster,
            self.requirements,
            measure,
            self.waiting_members,
            self.contention.ahead,
            self.planner.plans,
            self.planner.bound_of,
        )
        """Plans made for a verdict only, never kept (a gang member the cache lacks)."""

    def view(self, pod: Json) -> PodView:
        cluster = self._source.cluster
        return pod_view(pod, *self._resources, cluster.claim_demand(pod), cluster.selectors)

    def gang(self, pod: Json) -> Gang | Singleton:
        cluster = self._source.cluster
        held = self._native_held
        return gang_of(pod, cluster.podgroup_size, self._owner_gang, cluster.native.find, held)

    def waiting_members(self, gang: Gang) -> list[Json]:
        """The gang's pods in the cache that are not bound yet, by name: the planner groups
        them by the nodes they may use. Read from the cache's pending pods, not every pod (a
        million at 100,000 nodes, several times a plan)."""
        cluster = self._source.cluster
        found = []
        for key in sorted(k for k in cluster.pending if k[0] == gang.namespace):
            pod = cluster.pod(*key)
            if (
                pod is not None
                and not (pod.get("spec") or {}).get("nodeName")
                and gang_key(self.gang(pod)) == gang.key
            ):
                found.append(pod)
        return found

    def bound_members(self, gang: Gang) -> int:
        """How many of the gang's pods the cache shows bound."""
        return sum(
            1
            for pod in self._source.cluster.pods()
            if (pod.get("spec") or {}).get("nodeName")
            and (pod.get("metadata") or {}).get("namespace") == gang.namespace
            and gang_key(self.gang(pod)) == gang.key
        )

    def _owner_gang(self, pod: Json) -> Gang | Singleton | None:
        """The gang its owning workload declares, which vouches for members not created yet."""
        found = owner_gang(pod, self._source.owners, self._needs)
        return replace(found, vouched=True) if isinstance(found, Gang) else found

    def _needs(self, template: Json) -> bool:
        """Whether a workload's pod template requests GPUs or RDMA."""
        return self.view(template).relevant

    def _top_owner(self, pod: Json) -> Json | None:
        return top_owner(pod, self._source.owners)

    def _refused(self, hold: Hold, reason: str, pods: list[PodKey], begun: bool) -> None:
        self.contention.refused(hold, reason, pods, begun)
