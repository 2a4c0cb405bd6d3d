"""kube-scheduler's PostFilter: preemption for a pod that fit nowhere, carried out through the
apiserver and, when it has a preemptVerb, the extender.

Follows Evaluator.Preempt (kubernetes pkg/scheduler/framework/preemption/preemption.go):
eligibility, the candidates among the nodes that failed with a reason preemption may resolve,
the dry run of SelectVictimsOnNode on each (kubesim/scheduler/preemption.py), callExtenders, the
pick, then prepareCandidate: each victim gets the DisruptionTarget condition (reason
PreemptionByScheduler) in a status patch and is then deleted, so that watchers see the condition
on the deleted object, and an Event `Preempted`; the lower-priority pods nominated to that node
lose their nomination; the preemptor is nominated to it (handleSchedulingFailure,
pkg/scheduler/schedule_one.go). The victims' deletion is synchronous here, as before
SchedulerAsyncPreemption.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kube_rdma.core.nodeconstraints import NodeConstraints
from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import ApiError, NotFound
from kubesim.scheduler.apiserver import ApiCalls
from kubesim.scheduler.config import SchedulerConfig
from kubesim.scheduler.extender_client import ExtenderClient, ExtenderError
from kubesim.scheduler.fit import NodeFacts, NodeUsage, fit_failure
from kubesim.scheduler.nominated import Nominations
from kubesim.scheduler.placement import Unschedulable
from kubesim.scheduler.pods import PodKey, pod_key, pod_requests
from kubesim.scheduler.preemption import (
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
    Victims,
    aggregate,
    dry_run,
    not_eligible,
    pick_node,
    priority,
    select_victims,
)

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


@dataclass(frozen=True)
class Preemption:
    """What PostFilter did: the node the pod is nominated to and the victims deleted there, or
    why nothing was preempted."""

    node: str | None
    victims: tuple[PodKey, ...] = ()
    message: str = ""


class Preemptor:
    """Reads the scheduler's node facts, usage, nominations and the pods on each node (bound or
    assumed), which the scheduler keeps current."""

    def __init__(
        self,
        config: SchedulerConfig,
        nodes: Mapping[str, NodeFacts],
        usage: NodeUsage,
        nominations: Nominations,
        pods_by_node: Callable[[], Mapping[str, list[Json]]],
        lowest_priority: Callable[[], int | None],
    ) -> None:
        """`lowest_priority` gives the lowest priority among the pods placed on nodes: with
        none below the preemptor's, no node has a victim, which is known without a dry run."""
        self._config, self._nodes, self._usage = config, nodes, usage
        self._nominations, self._pods_by_node = nominations, pods_by_node
        self._lowest = lowest_priority

    async def post_filter(
        self,
        pod: Json,
        failure: Unschedulable,
        apiserver: ApiCalls,
        extender: ExtenderClient | None,
    ) -> Preemption:
        """Preemption for the pod, which failed as `failure` says on each node; an apiserver
        error ends it, as an Error status does."""
        if not self._config.preemption or not failure.failed:
            return Preemption(None)
        try:
            return await self._preempt(pod, failure, apiserver, extender)
        except ApiError as e:
            return Preemption(None, message=str(e))

    async def _preempt(
        self,
        pod: Json,
        failure: Unschedulable,
        apiserver: ApiCalls,
        extender: ExtenderClient | None,
    ) -> Preemption:
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        lowest = self._lowest()
        by_node = self._pods_by_node() if lowest is not None and lowest < priority(pod) else {}
        unresolvable = nominated in failure.failed and not failure.resolvable(nominated)
        why_not = not_eligible(pod, unresolvable, by_node.get(nominated, []))
        if why_not is not None:
            return Preemption(None, message=why_not)
        potential = failure.resolvable_nodes()
        if not by_node:  # SelectVictimsOnNode's answer on every node, known at once
            if nominated:
                await self._nominate(apiserver, pod, None)
            counts = {NO_VICTIMS: len(potential), NOT_HELPFUL: len(self._nodes) - len(potential)}
            return Preemption(None, message=_fit_error(len(self._nodes), counts))
        pdbs = await apiserver.disruption_budgets() if potential else []
        candidates, failures, errors = dry_run(
            potential,
            lambda node: select_victims(pod, by_node.get(node, []), self._fits(pod, node), pdbs),
        )
        if not candidates and errors:
            return Preemption(None, message=aggregate(errors))
        if not candidates:
            if nominated:
                await self._nominate(apiserver, pod, None)
            return Preemption(None, message=self._no_candidates(failures))
        if extender is not None and self._config.preempt_via_extender:
            try:
                candidates = await self._ask(extender, pod, candidates, by_node)
            except ExtenderError as e:
                return Preemption(None, message=str(e))
        node = pick_node(candidates)
        if node is None:
            return Preemption(None, message="no candidate node for preemption")
        deleted = await self._prepare(apiserver, pod, node, candidates[node])
        await self._nominate(apiserver, pod, node)
        return Preemption(node, deleted)

    def _fits(self, pod: Json, node: str) -> Callable[[Sequence[Json]], str | None]:
        """SelectVictimsOnNode's filter run: the in-tree filters on the node without `removed`,
        with the nominated pods of equal or higher priority."""
        requests = pod_requests(pod)
        constraints = NodeConstraints.of(pod)
        nominated = self._nominations.of(node, priority(pod), pod_key(pod))
        base = dict(self._usage.of(node))
        for name, amount in nominated.items():
            base[name] = base.get(name, 0) + amount

        def fits(removed: Sequence[Json]) -> str | None:
            used = dict(base)
            for victim in removed:
                for name, amount in {**pod_requests(victim), "pods": 1}.items():
                    used[name] = used.get(name, 0) - amount
            return fit_failure(self._nodes[node], used, requests, constraints)

        return fits

    def _no_candidates(self, failures: Mapping[str, str]) -> str:
        """The FitError kube-scheduler words for a preemption that found no candidate: the dry
        run's reasons, every node it did not try as not helpful."""
        counts = Counter(failures.values())
        counts[NOT_HELPFUL] += sum(1 for n in self._nodes if n not in failures)
        return _fit_error(len(self._nodes), counts)

    async def _ask(
        self,
        extender: ExtenderClient,
        pod: Json,
        candidates: dict[str, Victims],
        by_node: Mapping[str, list[Json]],
    ) -> dict[str, Victims]:
        """callExtenders: the extender's answer replaces the candidates; a node it answers
        without victims fails the preemption, and an error does, unless the extender is
        ignorable (then the node is dropped, or the answer skipped)."""
        ignorable = self._config.extender_ignorable
        if not extender.interested(pod):
            return candidates
        try:
            answer = await extender.preempt(
                pod, candidates, lambda n: by_node.get(n, []) if n in self._nodes else None
            )
        except ExtenderError:
            if ignorable:
                return candidates
            raise
        for node, victims in list(answer.items()):
            if not victims.pods:
                if not ignorable:
                    raise ExtenderError(f'expected at least one victim pod on node "{node}"')
                del answer[node]
        return answer

    async def _prepare(
        self, apiserver: ApiCalls, pod: Json, node: str, victims: Victims
    ) -> tuple[PodKey, ...]:
        """prepareCandidate: the victims marked and deleted; lower nominations on the node
        cleared."""
        deleted = []
        scheduler = (pod.get("spec") or {}).get("schedulerName") or self._config.scheduler_name
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_BY_SCHEDULER,
            "message": f"{scheduler}: preempting to accommodate a higher priority pod",
            "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for victim in victims.pods:
            if (victim.get("metadata") or {}).get("deletionTimestamp"):
                continue
            namespace, name = pod_key(victim)
            conditions = [
                c
                for c in (victim.get("status") or {}).get("conditions") or []
                if c.get("type") != DISRUPTION_TARGET
            ]
            try:
                await apiserver.patch_pod_status(
                    namespace, name, {"conditions": [*conditions, condition]}
                )
                await apiserver.delete_pod(namespace, name)
            except NotFound:
                continue
            deleted.append((namespace, name))
            await self._event(apiserver, pod, victim, node)
        mine = priority(pod)
        for key, their_priority in self._nominations.on(node):
            if their_priority < mine:
                with contextlib.suppress(NotFound):
                    await apiserver.patch_pod_status(*key, {"nominatedNodeName": None})
                self._nominations.set(key, None)
        return tuple(deleted)

    async def _nominate(self, apiserver: ApiCalls, pod: Json, node: str | None) -> None:
        key = pod_key(pod)
        self._nominations.set(key, node, priority(pod), pod_requests(pod))
        with contextlib.suppress(NotFound):
            await apiserver.patch_pod_status(*key, {"nominatedNodeName": node})

    async def _event(self, apiserver: ApiCalls, preemptor: Json, victim: Json, node: str) -> None:
        """The Event kube-scheduler's recorder writes on the victim (fire and forget)."""
        namespace, name = pod_key(victim)
        uid = (preemptor.get("metadata") or {}).get("uid") or ""
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": namespace,
                "name": name,
                "uid": (victim.get("metadata") or {}).get("uid") or "",
            },
            "related": {"apiVersion": "v1", "kind": "Pod", "namespace": pod_key(preemptor)[0],
                        "name": pod_key(preemptor)[1], "uid": uid},
            "reason": "Preempted",
            "action": "Preempting",
            "message": f"Preempted by pod {uid} on node {node}",
            "type": "Normal",
            "source": {"component": self._config.scheduler_name},
        }  # fmt: skip
        with contextlib.suppress(ApiError):
            await apiserver.create_event(namespace, event)


def _fit_error(num_all_nodes: int, counts: Mapping[str, int]) -> str:
    """FitError's message from reason counts (kubesim/scheduler/fit.py's fit_error, counted)."""
    reasons = sorted(f"{count} {reason}" for reason, count in counts.items() if count)
    return f"0/{num_all_nodes} nodes are available: {', '.join(reasons)}."
