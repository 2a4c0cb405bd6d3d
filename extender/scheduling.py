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
from extender.cluster.pods import PodKey
from extender.cluster.source import BindError, ClusterSource, LookupFailed
from extender.core import DEFAULT_CONTENTION, Core
from extender.engine import FilterOutcome
from extender.explain import bound_to, explanation, gang_summary, judge_own_node, mark_held
from extender.filtered_pods import WATCH_LAG_SECONDS, FilteredPods, until_cached
from extender.gangs.identity import Gang
from extender.gangs.planner import GangSettings
from extender.podview import PodView
from extender.preemption.contention import ContentionSettings, Waiting
from extender.preemption.priority import pod_priority
from extender.preemption.verb import preemption_candidates
from extender.protocol import MetaVictims
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
    ) -> None:
        """`clock` times the gang plans (seconds): the simulator gives its simulated clock.
        Without `disruptions` no gang preempts (holds still apply)."""
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
        )
        self.view, self.gang = core.view, core.gang
        self.engine, self.planner, self.holds = core.engine, core.planner, core.holds
        self.contention, self.evictor, self.upkeep = core.contention, core.evictor, core.upkeep
        self.records, self.broken = core.records, core.broken
        self.requirements = core.requirements
        self._barrier, self._freeing = core.barrier, core.freeing
        self._filtered = FilteredPods(clock=clock)

    def ready(self) -> bool:
        """The cluster and the gang plan records have been read."""
        return self._source.ready() and self.records.ready()

    def filter(self, pod: Json, names: list[str]) -> FilterOutcome:
        """Raises NotReady until the cluster and the gang plan records have been read."""
        if not self.ready():
            raise NotReady(STARTING)
        self.upkeep.take_over()
        view, gang = self.view(pod), self.gang(pod)
        if self._cached(view.namespace, view.name, view.uid) is None:
            self._filtered.remember(pod)
        if (node := self._already_bound(view)) is not None:
            reason = f"pod {view.namespace}/{view.name} is already bound to {node}"
            return FilterOutcome(
                [n for n in names if n == node], {}, {n: reason for n in names if n != node}
            )
        if isinstance(gang, Gang) and view.relevant:
            if (refused := self.planner.refusal(view, gang)) is not None:
                return FilterOutcome([], {}, dict.fromkeys(names, refused))
            waiting = self.contention.note(gang, view, pod)
            outcome = self.planner.filter(view, gang, names)
            if outcome is not None:
                return self._contended(waiting, outcome, names)
        return self._off_holds(pod, gang_key(gang), self.engine.filter(view, names, gang_key(gang)))

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
        """kube-scheduler's preemption for one pod (extender/preemption/verb.py)."""
        self.upkeep.take_over()
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
        self.upkeep.take_over()
        return self.engine.prioritize(self.view(pod), names, gang_key(self.gang(pod)))

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> dict[str, str]:
        """Bind the pod, a gang member together with the others; the annotations written.
        Raises BindError with the reason kube-scheduler is told."""
        if not self.ready():
            raise BindError(STARTING)
        self.upkeep.take_over()
        pod = await self._pod(namespace, name, uid)
        gang = self.gang(pod)
        if isinstance(gang, Gang):
            if _bound_to(pod, uid) == node:
                return {}  # the extender bound it when its gang's last member arrived
            await self._delivered(namespace, name, uid, gang)
            if not await self.records.flush(gang.key):
                raise BindError(f"gang {gang}: its plan could not be written to the API yet")
            # All or nothing: wait for every member to reach bind, or fail.
            relevant = self.view(pod).relevant
            if not await self._barrier.wait((namespace, name), uid, gang, node, relevant):
                return {}
        return await self._bind(pod, uid, node)

    async def _delivered(self, namespace: str, name: str, uid: str, gang: Gang) -> None:
        """The plan and the barrier count the members the cache holds: a member whose pod the
        watch has not delivered yet waits for it, briefly."""
        if not await until_cached(lambda: self._cached(namespace, name, uid), WATCH_LAG_SECONDS):
            raise BindError(
                f"gang {gang}: pod {namespace}/{name} is not in the extender's cache yet (its "
                f"watch lags by more than {WATCH_LAG_SECONDS:g}s); the pod is retried"
            )

    async def _bind_member(self, pod: PodKey, uid: str, node: str) -> None:
        """A gang member whose bind request returned before its gang arrived whole: its resource
        claims, which kube-scheduler unreserved when the request failed, are reserved again."""
        member = await self._pod(*pod, uid)
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

    def _already_bound(self, view: PodView) -> str | None:
        """The node this pod (this uid of it) is bound to in the cache: a gang member whose bind
        request gave up at the barrier was bound when its gang's last member arrived, and
        kube-scheduler, retrying it before its informer shows that, is steered to the same node,
        where the bind answers success."""
        cached = self._source.cluster.pod(view.namespace, view.name)
        return _bound_to(cached, view.uid) if cached is not None else None

    async def _pod(self, namespace: str, name: str, uid: str) -> Json:
        try:
            pod = await self.find_pod(namespace, name, uid)
        except LookupFailed as e:
            raise BindError(
                f"pod {namespace}/{name} is not in the extender's cache yet and could not be "
                f"read: {e}"
            ) from e
        if pod is None:
            raise BindError(f"pod {namespace}/{name} does not exist")
        known = (pod.get("metadata") or {}).get("uid")
        if known and uid and known != uid:
            raise BindError(f"pod {namespace}/{name} has uid {known}, not {uid}")
        return pod

    async def find_pod(self, namespace: str, name: str, uid: str = "") -> Json | None:
        """The pod from the cache; else, for a pod kube-scheduler's informer delivered before
        the extender's watch did, as this cycle's filter request carried it, or else as the
        apiserver has it. Raises LookupFailed."""
        pod = self._cached(namespace, name, uid) or self._filtered.get(namespace, name, uid)
        return pod if pod is not None else await self._source.read_pod(namespace, name)

    def _cached(self, namespace: str, name: str, uid: str) -> Json | None:
        """The cache's pod of that name, when it is the pod of that uid (any, for no uid)."""
        pod = self._source.cluster.pod(namespace, name)
        known = (pod.get("metadata") or {}).get("uid") if pod is not None else None
        return pod if pod is not None and (not uid or not known or known == uid) else None

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
        where it is, and its node judged without it."""
        view, gang = self.view(pod), self.gang(pod)
        body = explanation(view, self.engine.explain(view, gang_key(gang)), self._weights())
        bound = bound_to(pod)
        members = self._bound_members(gang) if bound and isinstance(gang, Gang) else None
        body["gang"] = gang_summary(gang, view, self.planner, self.contention, self.holds, members)
        if self.engine.require_acceptance:
            body["requireAcceptance"] = True
        if self.holds:
            mark_held(body, self.holds, pod_priority(pod), gang_key(gang))
        if bound is not None:
            body["bound"] = bound
            node = self._source.cluster.node(bound["node"])
            if node is not None:
                without = self.contention.freeing.without(node, [pod])
                judge_own_node(body, node.name, self.engine.verdict_on(view, without))
        return body

    def _bound_members(self, gang: Gang) -> int:
        """How many of the gang's pods the cache shows bound."""
        return sum(
            1
            for pod in self._source.cluster.pods()
            if (pod.get("spec") or {}).get("nodeName")
            and (pod.get("metadata") or {}).get("namespace") == gang.namespace
            and gang_key(self.gang(pod)) == gang.key
        )

    def sweep(self) -> None:
        """Gang plan upkeep as time passes and pods come and go (extender/upkeep.py)."""
        self.upkeep.sweep()


def _bound_to(pod: Json, uid: str) -> str | None:
    """The node the pod is bound to, when it is the pod of that uid."""
    if uid and (pod.get("metadata") or {}).get("uid") not in (None, "", uid):
        return None
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None
