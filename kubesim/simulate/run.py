"""One variant of a simulation: the workload scheduled on the cluster, on a simulated clock.

The emulated kube-scheduler (kubesim/scheduler) runs as it does against a real apiserver, here the
in-memory one; a variant with weights calls the extender's real Scheduler in the same process
(kubesim/simulate/wire.py), built as `create_app` builds it, its gang plans and barrier timed by
the same simulated clock. Each scheduling cycle costs `Settings.cycle` simulated seconds (the
in-tree plugins' share of a real cycle). The run ends when every job has all its pods bound, or
`Settings.patience` after the last arrival for the jobs that never got them.

In a cluster with DRA objects the store serves them (kubesim/simulate/dra.py), so the emulator's
DynamicResources plugin allocates the claims of the pods that have some, the extender's model
follows every claim write, and an audit (kubesim/simulate/claim_audit.py) checks each bound pod's
claims. The extender is then called for every pod (an empty `managedResources`, as docs/dra.md
has it), or it would never see a pod whose devices come from claims only.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from extender.app import Settings as ExtenderSettings
from extender.cluster import dra_objects
from extender.cluster.snapshot import SnapshotSource
from extender.scheduling import Scheduler
from extender.weights import Weights
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.objects import Json
from kubesim.scheduler import GPU, EmulatedScheduler, Job, Jobs, SchedulerConfig, bound_node
from kubesim.scheduler.apiserver import ApiCalls
from kubesim.scheduler.clock import LoopClock
from kubesim.scheduler.extender_client import Post
from kubesim.scheduler.pods import pod_requests
from kubesim.simulate.claim_audit import ClaimAudit
from kubesim.simulate.claim_jobs import ClaimJob, claim_templates
from kubesim.simulate.clock import run_simulated
from kubesim.simulate.cluster import SimCluster
from kubesim.simulate.dra import DraStore
from kubesim.simulate.holds import HoldRecorder, StoreRecords
from kubesim.simulate.source import (
    SimulatedSource,
    StoreDisruptions,
    StoreNominations,
    follow,
    follow_claims,
)
from kubesim.simulate.store import MemoryApiserver, PodListener
from kubesim.simulate.wire import NAME, InProcessExtender

IDLE_SWEEP_SECONDS = 60.0
"""How often the extender's gang plan upkeep runs while no gang has a plan."""
Progress = Callable[[float], None]
"""Told the share of the run's simulated span done so far, 0 to 1."""


@dataclass(frozen=True)
class Variant:
    name: str
    weights: Weights | None
    """None: plain kube-scheduler, without the extender."""
    native_gangs: bool = False
    """kube-scheduler's own gang scheduling on (the GenericWorkload and GangScheduling gates:
    the GangScheduling plugin and the PodGroup scheduling cycle, kubesim/scheduler)."""


@dataclass(frozen=True)
class Settings:
    cycle: float = 0.01
    """Simulated seconds each scheduling cycle takes at least."""
    sample_every: float = 600.0
    """Seconds between two samples of the GPUs in use."""
    patience: float = 6 * 3600.0
    """Seconds after the last arrival that jobs still waiting may take to be placed."""
    http_timeout: float = 5.0
    backoff_initial: float = 1.0
    backoff_max: float = 10.0
    max_unschedulable: float = 300.0
    preemption: bool = True
    """False: kube-scheduler's preemption off in every variant (a profile without
    DefaultPreemption), to compare."""
    nominate_members: bool = False
    """The extender nominates each gang plan's members to their planned nodes
    (`--nominate-members`), and kube-scheduler keeps its adaptive percentage of nodes to
    find; False: the extender's documented setting without it, 100 %."""


@dataclass
class Run:
    """What one variant did: the emulator (its recorder, attempts, binds and jobs), and the GPUs
    in use over time."""

    variant: Variant
    emulator: EmulatedScheduler
    start: float
    end: float
    wall_seconds: float
    holds: HoldRecorder | None = None
    """The extender's holds, from its records (None: not recorded)."""
    claims: ClaimAudit | None = None
    """How the claims of the pods bound stood (None: not audited)."""
    dra: DraStore | None = None
    """The DRA objects as the run left them."""
    samples: list[tuple[float, int]] = field(default_factory=list)
    """(simulated seconds since the start, GPUs bound)"""


class GpusInUse:
    """Store listeners counting the GPUs requested by pods bound to a node, and the GPUs that
    allocated claims hold."""

    def __init__(self, dra: DraStore) -> None:
        self.requested = 0
        self._index = DraIndex()
        self._index.replace_slices(dra.objects["resourceslices"].values())
        self._index.replace_claims(dra.claims().values())
        dra.on_claim(self.claim_changed)

    @property
    def count(self) -> int:
        held = (self._index.node(n) for n in list(self._index.nodes()))
        return self.requested + sum(d.in_use("gpu") for d in held if d is not None)

    def changed(self, old: Json | None, new: Json | None) -> None:
        for obj, sign in ((old, -1), (new, 1)):
            if obj is not None and bound_node(obj):
                self.requested += sign * pod_requests(obj).get(GPU, 0)

    def claim_changed(self, event: str, claim: Json) -> None:
        if event == "DELETED":
            meta = claim.get("metadata") or {}
            self._index.delete_claim((str(meta.get("namespace")), str(meta.get("name"))))
        else:
            self._index.upsert_claim(claim)


class MemoryLinks:
    def __init__(self, store: MemoryApiserver, post: Post | None) -> None:
        self._store, self._post = store, post
        self.extender_name = NAME if post is not None else None

    async def open(self, exits: contextlib.AsyncExitStack) -> tuple[ApiCalls, Post | None]:
        return self._store, self._post


def simulate(
    cluster: SimCluster,
    jobs: list[Job],
    variant: Variant,
    settings: Settings,
    progress: Progress | None = None,
) -> Run:
    """Run the variant on a fresh simulated clock; the wall time it took is in the result."""
    started = time.perf_counter()
    run = run_simulated(_simulate(cluster, jobs, variant, settings, progress or _quiet))
    run.wall_seconds = time.perf_counter() - started
    return run


async def _simulate(
    cluster: SimCluster, jobs: list[Job], variant: Variant, settings: Settings, progress: Progress
) -> Run:
    templates = claim_templates(jobs, cluster.model.cluster.dra)
    dra = DraStore([*(o for o in cluster.others if o["kind"] in dra_objects.KINDS), *templates])
    in_use, audit = GpusInUse(dra), ClaimAudit(dra.claims())
    dra.on_claim(audit.claim_changed)
    listeners: list[PodListener] = [in_use.changed, audit.pod_changed]
    model = SnapshotSource([*cluster.objects, *templates]) if variant.weights is not None else None
    if model is not None:
        listeners.append(follow(model.cluster))
        dra.on_claim(follow_claims(model.cluster))
        # The jobs' native PodGroups, as the extender's watch would have them: each is created
        # before its pods (the emulator hears of them from its job controller).
        for job in jobs:
            if (group := job.pod_group_object()) is not None:
                model.cluster.upsert_podgroup(group)
    loop = asyncio.get_running_loop()
    holds = HoldRecorder(loop.time)
    store = MemoryApiserver(
        cluster.nodes,
        cluster.pods,
        _fan_out(listeners),
        clock=loop.time,
        on_object=holds.changed,
        dra=dra,
    )
    for budget in cluster.budgets:
        store.create_object("poddisruptionbudgets", budget)
    for pod in cluster.pods:
        in_use.changed(None, pod)
    extender = None if model is None else _extender(model, store, variant, settings)
    links = MemoryLinks(store, extender.post if extender else None)
    clock = LoopClock()
    config = scheduler_config(variant, settings)
    if any(isinstance(j, ClaimJob) for j in jobs):
        config = replace(config, managed_resources=())
    async with EmulatedScheduler(
        links, None, config, clock, workload=Jobs(tuple(jobs))
    ) as emulator:
        start = clock.now()
        last = max((j.arrival for j in jobs), default=0.0) + settings.patience
        run = Run(variant, emulator, start, start, 0.0, holds, claims=audit, dra=dra)
        background = [asyncio.create_task(_sample(run, in_use, settings, last, progress))]
        if extender is not None:
            interval = ExtenderSettings().sweep_interval
            sweeping = extender.sweep(interval, IDLE_SWEEP_SECONDS)
            background.append(asyncio.create_task(sweeping))
        assert emulator.jobs is not None
        runner = emulator.jobs
        await emulator.run_until(lambda: runner.all_started, timeout=last)
        run.end = clock.now()
        run.samples.append((run.end - start, in_use.count))
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
    return run


def _extender(
    model: SnapshotSource, store: MemoryApiserver, variant: Variant, settings: Settings
) -> InProcessExtender:
    """The extender's Scheduler as create_app builds it, with the variant's weights."""
    app = ExtenderSettings()
    weights = variant.weights
    assert weights is not None
    loop = asyncio.get_running_loop()
    scheduler = Scheduler(
        SimulatedSource(model, store),
        lambda: weights,
        replace(app.gangs, percentage_of_nodes_to_score=0)
        if settings.nominate_members
        else app.gangs,
        app.gpu_resources,
        app.rdma_resources,
        StoreRecords(store),
        require_acceptance=app.require_acceptance,
        clock=loop.time,
        contention=replace(
            app.contention, scheduler_name=scheduler_config(variant, settings).scheduler_name
        ),
        disruptions=StoreDisruptions(store),
        nominations=StoreNominations(store) if settings.nominate_members else None,
    )
    return InProcessExtender(scheduler, settings.http_timeout, model.cluster)


def scheduler_config(variant: Variant, settings: Settings) -> SchedulerConfig:
    """The emulator's configuration for the variant (a real-time run can use it too)."""
    with_extender = variant.weights is not None
    return SchedulerConfig(
        use_extender=with_extender,
        preempt_via_extender=with_extender,
        preemption=settings.preemption,
        # The extender's documented setting; plain kube-scheduler's adaptive default.
        percentage_of_nodes_to_score=100
        if with_extender and not settings.nominate_members
        else None,
        http_timeout=settings.http_timeout,
        backoff_initial=settings.backoff_initial,
        backoff_max=settings.backoff_max,
        max_unschedulable=settings.max_unschedulable,
        in_tree_time=settings.cycle,
        idle_poll=3600.0,
        gang_scheduling=variant.native_gangs,
        pod_group_cycle=variant.native_gangs,
    )


async def _sample(
    run: Run, in_use: GpusInUse, settings: Settings, last: float, progress: Progress
) -> None:
    while True:
        elapsed = asyncio.get_running_loop().time() - run.start
        run.samples.append((elapsed, in_use.count))
        progress(min(elapsed / last, 1.0) if last > 0 else 1.0)
        await asyncio.sleep(settings.sample_every)


def _fan_out(listeners: list[PodListener]) -> PodListener:
    def changed(old: Json | None, new: Json | None) -> None:
        for listener in listeners:
            listener(old, new)

    return changed


def _quiet(done: float) -> None:
    return None
