"""One pod through the extender's verbs: to gang placement when it is a member of a gang, to the
engine alone otherwise.

`Scheduler` is built once, by create_app, around the cluster source and the weights, and builds
its core once as well (extender/core.py), like scheduler-plugins' coscheduling.New building its
core.Manager. The HTTP handlers decode a request, make one call here and encode the answer.

Gang plans are also written to the API (extender/book/records.py). Before answering, the
scheduler checks whether another process has written records since it last looked: if so it
serves after a takeover or a restart, and first adopts the recorded plans
(extender/upkeep.py, extender/gangs/resume.py). A standby that is never called never
adopts, never sweeps and so never writes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence

from extender.binding import node_settings
from extender.book.records import PlanRecords
from extender.book.reservations import GangKey
from extender.cluster.disruptions import Disruptions
from extender.cluster.nominations import Nominations
from extender.cluster.pods import PodKey
from extender.cluster.source import BindError, ClusterSource, LookupFailed
from extender.cluster.trim import DEFAULT_SCHEDULER
from extender.core import DEFAULT_CONTENTION, Core
from extender.engine import FilterOutcome
from extender.explain import explain_pod
from extender.filtered_pods import WATCH_LAG_SECONDS, FilteredPods, until_cached
from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings
from extender.gangs.pools import asks
from extender.podview import PodView
from extender.preemption.contention import ContentionSettings, Waiting
from extender.preemption.priority import pod_priority
from extender.preemption.verb import preemption_candidates
from extender.protocol import HostScores, MetaVictims
from extender.upkeep import gang_key
from extender.weights import Weights
from kube_rdma.core.objects import Json

log = logging.getLogger("kube_rdma.extender")
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
        contention: ContentionSettings = DEFAULT_CONTENTION,
        disruptions: Disruptions | None = None,
        own_pods_only: bool = False,
        nominations: Nominations | None = None,
    ) -> None:
        """`clock` times the gang plans (seconds): the simulator gives its simulated clock.
        Without `disruptions` no gang preempts (holds still apply); with `nominations`, each
        gang plan's members are nominated to their planned nodes. With `own_pods_only`, only
        pods of `contention.scheduler_name` are bound."""
        self._source = source
        self._weights = weights
        core = Core(
            source,
            weights,
            gangs,
            (gpu_resources, rdma_resources),
            self._bind_member,
            records,
            require_acceptance,
            clock,
            contention,
            disruptions,
            nominations,
        )
        self._core = core
        self.view, self.gang = core.view, core.gang
        self.engine, self.planner, self.holds = core.engine, core.planner, core.holds
        self.contention, self.evictor, self.upkeep = core.contention, core.evictor, core.upkeep
        self.records, self.broken = core.records, core.broken
        self.requirements = core.requirements
        self._barrier, self._freeing = core.barrier, core.freeing
        self._filtered = FilteredPods(clock=clock)
        self._clock = clock
        self._dry = core.dry_maker
        self._scheduler_name = contention.scheduler_name if own_pods_only else None
        """Binds refuse pods of another scheduler (`kube-rdma extender` always sets it)."""

    def ready(self) -> bool:
        """The cluster and the gang plan records have been read."""
        return self._source.ready() and self.records.ready()

    def filter(self, pod: Json, names: list[str]) -> FilterOutcome:
        """Raises NotReady until the cluster and the gang plan records have been read.

        Only a pod the cache holds, with the request's uid, has any effect beyond the answer
        (a gang plan, holds, preemption, a takeover), and it is judged as the cache has it: the
        request body is the caller's word, the cache the apiserver's."""
        if not self.ready():
            raise NotReady(STARTING)
        cached = self._known(pod)
        if cached is None:
            self._filtered.remember(pod)
            return self._unknown(pod, names)
        self.upkeep.take_over()
        pod = cached
        view, gang = self.view(pod), self.gang(pod)
        if (node := _bound_to(pod, view.uid)) is not None:
            reason = f"pod {view.namespace}/{view.name} is already bound to {node}"
            return FilterOutcome(
                [n for n in names if n == node], {}, {n: reason for n in names if n != node}
            )
        if isinstance(gang, Gang) and view.relevant:
            if (refused := self.planner.refusal(view, gang)) is not None:
                return FilterOutcome([], {}, dict.fromkeys(names, refused))
            waiting = self.contention.note(gang, view, pod)
            self._redo_unhonoured(view, gang, pod)
            outcome = self.planner.filter(view, gang, names)
            if outcome is not None:
                return self._contended(waiting, outcome, names)
        return self._off_holds(pod, gang_key(gang), self.engine.filter(view, names, gang_key(gang)))

    def _unknown(self, pod: Json, names: list[str]) -> FilterOutcome:
        """The answer for a pod the cache lacks (the watch has not delivered it yet, or it does
        not exist): a pod alone is judged from the request's copy; a gang member fails the
        cycle, to be retried, since a gang is planned, holds and preempts only for pods the
        apiserver has delivered."""
        view, gang = self.view(pod), self.gang(pod)
        if isinstance(gang, Gang) and view.relevant:
            raise NotReady(
                f"pod {view.namespace}/{view.name} of gang {gang} is not in the extender's "
                "cache yet: gangs are planned only for pods its watch has delivered; "
                f"{self._as_asked(view, gang, pod)}; the pod is retried"
            )
        return self._off_holds(pod, gang_key(gang), self.engine.filter(view, names, gang_key(gang)))

    def _as_asked(self, view: PodView, gang: Gang, pod: Json) -> str:
        """Where the gang would be planned now, honouring what `pod` (kube-scheduler's copy)
        asks: made, never kept."""
        if (plan := self.planner.plans.get(gang.key)) is not None:
            return f"its gang has a {plan.describe()}"
        made = self._dry.make(gang, view, self._clock(), raw=pod)
        if made is None:
            return "as it asks, its gang does not fit now"
        slots = made.plan.slots
        shown = ", ".join(slots[:8]) + (f", ... ({len(slots)} in all)" if len(slots) > 8 else "")
        return f"as it asks, its gang would get a {made.plan.describe()}: {shown}"

    def _redo_unhonoured(self, view: PodView, gang: Gang, pod: Json) -> None:
        """Plan the gang again when this member, which the plan was made without, asks other
        than the members it honoured (its node selector, affinity, tolerations or placement)."""
        plan = self.planner.plans.get(gang.key)
        if plan is None or not plan.honoured or view.key in plan.assigned:
            return
        known = plan.honoured.get(view.key)
        wanted = asks(pod)
        if known == wanted or (known is None and wanted in plan.honoured.values()):
            return
        log.info(
            "gang %s: member %s/%s asks other than its plan honoured; planning again",
            gang,
            *view.key,
            extra={"gang": str(gang)},
        )
        self.planner.drop(gang.key, f"gang {gang} is planned again for what a member asks")

    def _known(self, pod: Json) -> Json | None:
        """The cache's copy of the pod a request carries, when the cache holds that pod, with
        that uid."""
        meta = pod.get("metadata") or {}
        cached = self._source.cluster.pod(str(meta.get("namespace")), str(meta.get("name")))
        if cached is None or _uid(cached) != str(meta.get("uid") or ""):
            return None
        return cached

    def _contended(
        self, waiting: Waiting, outcome: FilterOutcome, names: list[str]
    ) -> FilterOutcome:
        """A gang member's answer: while the gang has no plan it may preempt or hold nodes
        (extender/preemption/contention.py), and its members fail as unresolvable meanwhile, so
        that kube-scheduler's own preemption leaves gangs to the extender."""
        key = waiting.gang.key
        if key in self.planner.plans:
            self.contention.placed(key)
            return outcome
        no_fit = next(iter(outcome.failed.values()), "") or next(
            iter(outcome.unresolvable.values()), f"gang {waiting.gang} does not fit"
        )
        return FilterOutcome(
            [], {}, dict.fromkeys(names, self.contention.unplaced(waiting, no_fit))
        )

    def _off_holds(self, pod: Json, gang: GangKey | None, outcome: FilterOutcome) -> FilterOutcome:
        """Nodes held for a gang of the same or a higher priority fail as unresolvable for
        every other pod: kube-scheduler then neither places nor preempts there for it."""
        if not self.holds:
            return outcome
        priority = pod_priority(pod)
        blocked = {}
        for name in [*outcome.passed, *outcome.failed]:
            hold = self.holds.blocking(name, priority, gang)
            if hold is not None:
                blocked[name] = f"node {hold.describe()}"
        if not blocked:
            return outcome
        return FilterOutcome(
            [n for n in outcome.passed if n not in blocked],
            {n: r for n, r in outcome.failed.items() if n not in blocked},
            {**outcome.unresolvable, **blocked},
        )

    def preempt(self, pod: Json, victims: Mapping[str, MetaVictims]) -> dict[str, MetaVictims]:
        """kube-scheduler's preemption for one pod (extender/preemption/verb.py); none for a pod
        the cache lacks (or holds with another uid): no victims, nothing decided."""
        cached = self._known(pod)
        if cached is None:
            return {}
        self.upkeep.take_over()
        pod = cached
        gang = self.gang(pod)
        if isinstance(gang, Gang):
            # Gangs preempt whole, through the extender's own gang preemption: decided now.
            view = self.view(pod)
            if view.relevant and gang.key not in self.planner.plans:
                self.upkeep.decide(self.contention.note(gang, view, pod))
            return {}
        return preemption_candidates(
            self.engine,
            self._source.cluster,
            self.holds,
            self.gang,
            self.view(pod),
            pod,
            victims,
            self._freeing,
        )

    def prioritize(self, pod: Json, names: list[str]) -> dict[str, float]:
        if self._known(pod) is not None:
            self.upkeep.take_over()
        return self.engine.prioritize(self.view(pod), names, gang_key(self.gang(pod)))

    def answer_scores(self, pod: Json, names: list[str]) -> HostScores:
        """`prioritize` as the HostPriorityList the wire carries, encoded in advance per shape
        where it can be (Engine.answer_scores)."""
        if self._known(pod) is not None:
            self.upkeep.take_over()
        return self.engine.answer_scores(self.view(pod), names, gang_key(self.gang(pod)))

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> dict[str, str]:
        """Bind the pod, a gang member together with the others; the annotations written.
        Only a pod the cache holds with that uid, not bound yet, of the scheduler the extender
        serves is bound. Raises BindError with the reason kube-scheduler is told."""
        if not self.ready():
            raise BindError(STARTING)
        pod = await self._bindable(namespace, name, uid)
        self.upkeep.take_over()
        gang = self.gang(pod)
        bound = _bound_to(pod, uid)
        if isinstance(gang, Gang):
            if bound == node:
                return {}  # the extender bound it when its gang's last member arrived
            if bound is not None:
                raise BindError(f"pod {namespace}/{name} is already bound to {bound}")
            if not await self.records.flush(gang.key):
                raise BindError(f"gang {gang}: its plan could not be written to the API yet")
            # All or nothing: wait for every member to reach bind, or fail.
            relevant = self.view(pod).relevant
            if not await self._barrier.wait((namespace, name), uid, gang, node, relevant):
                return {}
        elif bound is not None:
            raise BindError(f"pod {namespace}/{name} is already bound to {bound}")
        return await self._bind(pod, uid, node)

    async def _bindable(self, namespace: str, name: str, uid: str) -> Json:
        """The cache's pod of that name and uid, of this extender's scheduler. The watch may lag
        kube-scheduler's informer by milliseconds: a pod not delivered yet is waited for,
        briefly. Raises BindError."""
        if not await until_cached(lambda: self._cached(namespace, name, uid), WATCH_LAG_SECONDS):
            raise BindError(await self._why_uncached(namespace, name, uid))
        pod = self._source.cluster.pod(namespace, name) or {}
        scheduler = (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER
        if self._scheduler_name is not None and scheduler != self._scheduler_name:
            raise BindError(
                f"pod {namespace}/{name} is for scheduler {scheduler}, not "
                f"{self._scheduler_name}: the extender binds only the pods of the scheduler "
                "it serves"
            )
        return pod

    async def _why_uncached(self, namespace: str, name: str, uid: str) -> str:
        """Why the cache has no pod of that name and uid to bind: the apiserver is asked, for
        the answer only (nothing is bound from what it says)."""
        pod = self._source.cluster.pod(namespace, name)
        if pod is None:
            try:
                pod = await self._source.read_pod(namespace, name)
            except LookupFailed as e:
                return (
                    f"pod {namespace}/{name} is not in the extender's cache yet and could not "
                    f"be read: {e}"
                )
            if pod is None:
                return f"pod {namespace}/{name} does not exist"
        if _uid(pod) != uid:
            return f"pod {namespace}/{name} has uid {_uid(pod)}, not {uid}"
        return (
            f"pod {namespace}/{name} is not in the extender's cache yet (its watch lags by more "
            f"than {WATCH_LAG_SECONDS:g}s; it binds only pods its watch delivered); the pod is "
            "retried"
        )

    async def _bind_member(self, pod: PodKey, uid: str, node: str) -> None:
        """A gang member whose bind request returned before its gang arrived whole: its resource
        claims, which kube-scheduler unreserved when the request failed, are reserved again."""
        member = await self._bindable(*pod, uid)
        await self._source.reserve_claims(member, node)
        await self._bind(member, uid, node)

    async def _bind(self, pod: Json, uid: str, node: str) -> dict[str, str]:
        view, gang = self.view(pod), self.gang(pod)
        annotations = self._node_settings(view, node)
        await self._source.bind(view.namespace, view.name, uid, node, annotations)
        if isinstance(gang, Gang):
            self.planner.bound(view.key, gang, node)
        return annotations

    async def shutdown(self) -> None:
        """The extender stops: binds held at the barrier fail now, binds under way finish."""
        self._barrier.close(
            "the kube-rdma extender is shutting down; the pod is retried, and the extender that "
            "serves next finishes its gang"
        )
        await self._barrier.drain()
        await self.evictor.drain()

    async def find_pod(self, namespace: str, name: str) -> Json | None:
        """The pod, for explain (which changes nothing): from the cache; else, for a pod
        kube-scheduler's informer delivered before the extender's watch did, as a filter
        request carried it, or else as the apiserver has it. Raises LookupFailed."""
        pod = self._source.cluster.pod(namespace, name) or self._filtered.find(namespace, name)
        return pod if pod is not None else await self._source.read_pod(namespace, name)

    def _cached(self, namespace: str, name: str, uid: str) -> Json | None:
        """The cache's pod of that name, when it is the pod of that uid (a bind request without
        one names the pod by its name alone)."""
        pod = self._source.cluster.pod(namespace, name)
        return pod if pod is not None and (not uid or _uid(pod) == uid) else None

    def _node_settings(self, view: PodView, name: str) -> dict[str, str]:
        if not view.node_settings:
            return {}
        node = self._source.cluster.node(name)
        if node is None:
            raise BindError(f"node {name} is not in the extender's cache")
        return node_settings(view, node, self.engine.rails(view, node))

    def explain(self, namespace: str, name: str) -> Json | None:
        """Every node's verdict and scores for the pod, and its gang's plan, wait and hold;
        None when the pod is not in the cache."""
        pod = self._source.cluster.pod(namespace, name)
        return None if pod is None else self.explain_pod(pod)

    def explain_pod(self, pod: Json) -> Json:
        """Every node's verdict and scores for `pod`, and its gang's plan; for a bound pod,
        where it is, and its node judged without it (extender/explain.py)."""
        return explain_pod(self._core, self._weights(), pod)

    def sweep(self) -> None:
        """Gang plan upkeep as time passes and pods come and go (extender/upkeep.py)."""
        self.upkeep.sweep()


def _uid(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def _bound_to(pod: Json, uid: str) -> str | None:
    """The node the pod is bound to, when it is the pod of that uid."""
    if uid and (pod.get("metadata") or {}).get("uid") not in (None, "", uid):
        return None
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None
