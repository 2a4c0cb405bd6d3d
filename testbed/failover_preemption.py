"""Kill the serving scheduler pod while a gang preemption is in flight.

The cluster is full of low-priority gangs, all running. A gang of a higher priority arrives, and
the serving extender preempts for it: it records a hold naming its victims, whole gangs
(extender/book/holds.py), and evicts them. The harness SIGKILLs the serving pod the moment
that record appears, while victims are still being evicted or the preemptor is not placed yet.
The other pod's extender must adopt the hold, finish the evictions (whole victim gangs, never
part of one) and place the preemptor whole.

Same processes as testbed/failover.py: the fake apiserver, and two scheduler pods, each an
emulated kube-scheduler with Lease leader election and the real extender beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client

from extender.book.records import decode
from kube_rdma.core import keys
from kube_rdma.kube.client import call
from kube_rdma.kube.reflector import Reflector
from testbed.failover import (
    POLL_SECONDS,
    FailoverRun,
    cluster,
    gang_pods,
    scheduler_pods,
    serving_pod,
    take_over,
)
from testbed.observer import Findings, Observer
from testbed.wait import eventually

NAMESPACE = "team-a"
PREEMPTOR = "urgent"


@dataclass(frozen=True)
class PreemptionRun:
    victim_gangs: int = 4
    """Low-priority gangs of `victim_size` pods (one node each) filling the cluster."""
    victim_size: int = 2
    preemptor_size: int = 4
    priority: int = 1000
    within: float = 60.0
    """Seconds each step may take before the run fails."""


@dataclass
class PreemptionReport(Findings):
    victims_recorded: list[str] = field(default_factory=list)
    """The victim units the hold named when the kill struck."""
    victim_pods_left_at_kill: int = 0
    """Pods of those victims not yet gone when the kill struck."""
    takeover: float = 0.0
    placed_after_kill: float = 0.0
    """Seconds from the kill until the preemptor was bound whole."""
    partly_bound: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    """The low-priority gangs still running, whole, at the end."""


async def preemption_failover(prun: PreemptionRun, run: FailoverRun) -> PreemptionReport:
    """`run` gives the cluster (its `nodes` must be filled exactly by the victims) and the
    scheduler pods' timings."""
    report = PreemptionReport()
    observer = Observer(report, 8)
    async with (
        scheduler_pods(run, cluster(run)) as (url, replicas),
        client.ApiClient(client.Configuration(host=url)) as api,
    ):
        core: Any = client.CoreV1Api(api)
        leases: Any = client.CoordinationV1Api(api)
        pods = Reflector(core.list_pod_for_all_namespaces, observer.replace, observer.event, "pods")
        watch = asyncio.create_task(pods.run())
        try:
            await eventually(pods.synced.is_set, within=prun.within)
            await _fill(prun, core, observer)
            for pod in gang_pods(PREEMPTOR, prun.preemptor_size):
                pod["spec"]["priority"] = prun.priority
                await core.create_namespaced_pod(NAMESPACE, pod)
            hold = await _hold_recorded(core, prun.within)
            serving = await serving_pod(leases, replicas)
            killed_at = time.monotonic()
            serving.kill()
            report.victims_recorded = [str(name) for name, _ in hold["units"]]
            victims = {tuple(key) for _, pods_ in hold["units"] for key in pods_}
            report.victim_pods_left_at_kill = len(victims & observer.nodes.keys())
            report.takeover = await take_over(leases, serving, killed_at)
            await eventually(lambda: PREEMPTOR in observer.findings.gangs_whole, prun.within)
            report.placed_after_kill = time.monotonic() - killed_at
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
    report.partly_bound = observer.partly_bound()
    report.running = sorted(
        gang
        for gang in {g for g in observer.gangs.values() if g and g != PREEMPTOR}
        if gang not in report.partly_bound
        and any(observer.gangs.get(k) == gang for k in observer.nodes)
    )
    return report


async def _fill(prun: PreemptionRun, core: Any, observer: Observer) -> None:
    """The low-priority gangs, created and running whole."""
    names = [f"low{i}" for i in range(prun.victim_gangs)]
    for name in names:
        for pod in gang_pods(name, prun.victim_size):
            await core.create_namespaced_pod(NAMESPACE, pod)
    await eventually(lambda: observer.findings.gangs_whole >= set(names), prun.within)


async def _hold_recorded(core: Any, within: float) -> dict[str, Any]:
    """The hold a preemption recorded (the `hold` of its plan record), polled as fast as the
    harness polls the Lease."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        records = await call(
            "list hold records",
            core.list_namespaced_config_map,
            "kube-rdma",
            label_selector=f"{keys.GANG_HOLD}=true",
        )
        for item in records["items"]:
            record = decode(item)
            if record is not None and record.hold is not None and record.hold.get("units"):
                return dict(record.hold)
        await asyncio.sleep(POLL_SECONDS)
    raise AssertionError(f"no preemption was recorded within {within:g}s")
