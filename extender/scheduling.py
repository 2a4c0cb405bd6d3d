"""One pod through the extender's verbs: to gang placement when it is a member of a gang, to the
engine alone otherwise.

`Scheduler` is built once, by create_app, around the cluster source and the weights, and builds
its core once as well, like scheduler-plugins' coscheduling.New building its core.Manager: the
book of gang plans, the engine reading that book, the planner writing it, and the bind barrier.
The HTTP handlers decode a request, make one call here and encode the answer.

Gang plans are also written to the API (extender/gangs/records.py). Before answering, the
scheduler checks whether another process has written records since it last looked: if so it
serves after a takeover or a restart, and first adopts the recorded plans
(extender/gangs/resume.py). A standby that is never called never adopts, never sweeps and so
never writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence

from extender.binding import node_settings
from extender.cluster.model import PodKey
from extender.cluster.source import BindError, ClusterSource
from extender.engine import Engine, FilterOutcome
from extender.explain import explanation
from extender.gangs.barrier import Barrier
from extender.gangs.identity import Gang, Singleton, gang_of
from extender.gangs.ownership import owner_gang
from extender.gangs.planner import GangSettings, Planner
from extender.gangs.records import PlanRecords
from extender.gangs.reservations import GangKey, Reservations
from extender.gangs.resume import Members, resume
from extender.podview import PodView, pod_view
from extender.weights import Weights
from kube_rdma.core.objects import Json

STARTING = "the kube-rdma extender is starting: cluster not read yet; the pod is retried"


class NotReady(Exception):
    """The extender cannot judge yet: the cycle fails and kube-scheduler retries the pod."""


class Scheduler:
    def __init__(
        self,
        source: ClusterSource,
        weights: Callable[[], Weights],
        gangs: GangSettings,
        gpu_resources: Sequence[str],
        rdma_resources: Sequence[str],
        records: PlanRecords | None = None,
        require_acceptance: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`clock` times the gang plans (seconds): the simulator gives its simulated clock."""
        self._source = source
        self._weights = weights
        self._resources = (tuple(gpu_resources), tuple(rdma_resources))
        cluster = source.cluster
        book = Reservations(gangs.domains[0] if gangs.domains else None)
        self.engine = Engine(cluster, weights, book, require_acceptance)
        self.planner = Planner(cluster, self.engine, book, gangs, clock, records)
        self._records = self.planner.records
        self._adopted = 0
        """The records' foreign changes when this process last adopted them."""
        self._barrier = Barrier(self.planner, cluster, gangs.barrier_timeout, self._bind_member)

    def view(self, pod: Json) -> PodView:
        return pod_view(pod, *self._resources)

    def gang(self, pod: Json) -> Gang | Singleton:
        return gang_of(pod, self._source.cluster.podgroup_size, self._owner_gang)

    def _owner_gang(self, pod: Json) -> Gang | Singleton | None:
        return owner_gang(pod, self._source.owners, self._needs)

    def _needs(self, template: Json) -> bool:
        """Whether a workload's pod template requests GPUs or RDMA."""
        return self.view(template).relevant

    def ready(self) -> bool:
        """The cluster and the gang plan records have been read."""
        return self._source.ready() and self._records.ready()

    def filter(self, pod: Json, names: list[str]) -> FilterOutcome:
        """Raises NotReady until the cluster and the gang plan records have been read."""
        if not self.ready():
            raise NotReady(STARTING)
        self._take_over()
        view, gang = self.view(pod), self.gang(pod)
        if (node := self._already_bound(view)) is not None:
            reason = f"pod {view.namespace}/{view.name} is already bound to {node}"
            return FilterOutcome(
                [n for n in names if n == node], {}, {n: reason for n in names if n != node}
            )
        if isinstance(gang, Gang) and view.relevant:
            outcome = self.planner.filter(view, gang, names)
            if outcome is not None:
                return outcome
        return self.engine.filter(view, names, _key(gang))

    def prioritize(self, pod: Json, names: list[str]) -> dict[str, float]:
        self._take_over()
        return self.engine.prioritize(self.view(pod), names, _key(self.gang(pod)))

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> dict[str, str]:
        """Bind the pod, a gang member together with the others; the annotations written.
        Raises BindError with the reason kube-scheduler is told."""
        if not self.ready():
            raise BindError(STARTING)
        self._take_over()
        pod = self._pod(namespace, name)
        gang = self.gang(pod)
        if isinstance(gang, Gang):
            if _bound_to(pod, uid) == node:
                return {}  # the extender bound it when its gang's last member arrived
            if not await self._records.flush(gang.key):
                raise BindError(f"gang {gang}: its plan could not be written to the API yet")
            # All or nothing: wait for every member to reach bind, or fail.
            relevant = self.view(pod).relevant
            if not await self._barrier.wait((namespace, name), uid, gang, node, relevant):
                return {}
        return await self._bind(namespace, name, uid, node)

    async def _bind_member(self, pod: PodKey, uid: str, node: str) -> None:
        """A gang member whose bind request returned before its gang arrived whole."""
        await self._bind(*pod, uid, node)

    async def _bind(self, namespace: str, name: str, uid: str, node: str) -> dict[str, str]:
        pod = self._pod(namespace, name)
        view, gang = self.view(pod), self.gang(pod)
        annotations = self._node_settings(view, node)
        await self._source.bind(namespace, name, uid, node, annotations)
        if isinstance(gang, Gang):
            self.planner.bound(view.key, gang, node)
        return annotations

    async def shutdown(self) -> None:
        """The extender stops: binds held at the barrier fail now, binds under way finish."""
        self._barrier.close(
            "the kube-rdma extender is shutting down; the pod is retried and its gang planned "
            "again by the extender that serves next"
        )
        await self._barrier.drain()

    def _already_bound(self, view: PodView) -> str | None:
        """The node this pod (this uid of it) is bound to in the cache: a gang member whose bind
        request gave up at the barrier was bound when its gang's last member arrived, and
        kube-scheduler, retrying it before its informer shows that, is steered to the same node,
        where the bind answers success."""
        cached = self._source.cluster.pod(view.namespace, view.name)
        return _bound_to(cached, view.uid) if cached is not None else None

    def _pod(self, namespace: str, name: str) -> Json:
        pod = self._source.cluster.pod(namespace, name)
        if pod is None:
            raise BindError(f"pod {namespace}/{name} is not in the extender's cache")
        return pod

    def _node_settings(self, view: PodView, name: str) -> dict[str, str]:
        if not view.node_settings:
            return {}
        node = self._source.cluster.node(name)
        if node is None:
            raise BindError(f"node {name} is not in the extender's cache")
        return node_settings(view, node, self.engine.rails(view, node))

    def explain(self, namespace: str, name: str) -> Json | None:
        """Every node's verdict and scores for the pod, and its gang's plan; None when the pod
        is not in the cache."""
        pod = self._source.cluster.pod(namespace, name)
        if pod is None:
            return None
        view, gang = self.view(pod), self.gang(pod)
        body = explanation(view, self.engine.explain(view, _key(gang)), self._weights())
        body["gang"] = self._gang_summary(gang, view)
        if self.engine.require_acceptance:
            body["requireAcceptance"] = True
        return body

    def _gang_summary(self, gang: Gang | Singleton, view: PodView) -> Json:
        if isinstance(gang, Singleton):
            return {"singleton": gang.reason or "the pod names no gang"}
        summary: Json = {"name": str(gang), "size": gang.size, "source": gang.source}
        plan = self.planner.plans.get(gang.key)
        if plan is None:
            summary["plan"] = None
            # What the filter answers kube-scheduler for this member now: the numbers.
            summary["capacity"] = self.planner._no_fit_reason(view, gang)
        else:
            summary["plan"] = {"domain": plan.domain, "nodes": sorted(set(plan.slots))}
        return summary

    def sweep(self) -> None:
        """Gang plan upkeep as time passes and pods come and go; none while another process
        may have written plans since this one last adopted them (a standby, or a leader that
        lost its place)."""
        if self._adopted == self._records.foreign_changes:
            self.planner.sweep()

    def _take_over(self) -> None:
        """Adopt the recorded plans when another process has written some since last time."""
        foreign = self._records.foreign_changes
        if foreign == self._adopted:
            return
        self._adopted = foreign
        saved = dict(self._records.saved())
        reason = "another kube-rdma extender served meanwhile; the pod is retried"
        resume(self.planner, saved, self._members(saved.keys()), reason)

    def _members(self, gangs: Collection[GangKey]) -> dict[GangKey, Members]:
        """What the cache shows of each gang: a member with GPU or RDMA requests, and the
        members bound."""
        found: dict[GangKey, Members] = {}
        namespaces = {namespace for namespace, _ in gangs}
        for pod in self._source.cluster.pods():
            if (pod.get("metadata") or {}).get("namespace") not in namespaces:
                continue
            gang = self.gang(pod)
            if not isinstance(gang, Gang) or gang.key not in gangs:
                continue
            view = self.view(pod)
            entry = found.get(gang.key)
            if entry is None or (view.relevant and not entry.member.relevant):
                entry = found[gang.key] = Members(gang, view, entry.bound if entry else {})
            if node := (pod.get("spec") or {}).get("nodeName"):
                entry.bound[view.key] = str(node)
        return found


def _key(gang: Gang | Singleton) -> tuple[str, str] | None:
    return gang.key if isinstance(gang, Gang) else None


def _bound_to(pod: Json, uid: str) -> str | None:
    """The node the pod is bound to, when it is the pod of that uid."""
    if uid and (pod.get("metadata") or {}).get("uid") not in (None, "", uid):
        return None
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None
