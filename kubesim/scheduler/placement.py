"""Picking a node for one pod: schedulePod of pkg/scheduler/schedule_one.go, for one profile.

Where it follows kube-scheduler:
- the in-tree filters run over the nodes in nodeTree order from where the previous cycle stopped,
  until numFeasibleNodesToFind nodes passed; only those are sent to the extender's /filter; the
  in-tree part of a cycle takes at least `in_tree_time` (a cluster's plugins cost more than the
  emulator's fit);
- the nodes the extender fails join the in-tree failures in FitError's message; each failure
  keeps whether preemption could resolve it (findNodesThatPassExtenders: FailedNodes are
  Unschedulable, FailedAndUnresolvableNodes UnschedulableAndUnresolvable; in-tree, only
  NodeResourcesFit's reasons are resolvable: taints and cordons are UnschedulableAndUnresolvable);
- a pod nominated to a node by an earlier preemption tries that node alone first
  (evaluateNominatedNode), and the filters count the nominated pods of equal or higher priority
  on each node (kubesim/scheduler/nominated.py);
- with one feasible node left there is nothing to score and /prioritize is not called; its
  errors are ignored (no extender scores); an extender score is multiplied by the extender's
  weight and MaxNodeScore / MaxExtenderPriority (100 / 10) and added to the in-tree score.

Where it simplifies, and a careful reader could tell: ties go to the smallest node name
(kube-scheduler picks at random among the best).

A node's in-tree verdict for a pod depends only on the node, its usage and what the pod asks
(requests and node constraints), so it is kept until the node or its usage changes: pods of one
shape, as a gang's members are, are judged once per node state, and the walk reads a table of
the shape's verdicts on every node (kubesim/scheduler/verdicts.py) instead of calling a filter
per node (the simulator's day of thousands of pods over thousands of nodes depends on it; the
walk's answer is the same, kubesim/scheduler/nodetree.py `scan_verdicts`). And when no node
passed for a shape, the whole pass is kept until any node, its usage or a nomination changes: a
backlog of pending pods of one shape, retried one after another after an event that freed
nothing for them, is judged once, not node by node for each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from kube_rdma.core.nodeconstraints import NodeConstraints
from kube_rdma.core.objects import Json
from kubesim.scheduler.changes import ChangeLog
from kubesim.scheduler.clock import Clock
from kubesim.scheduler.config import SchedulerConfig, num_feasible_nodes_to_find
from kubesim.scheduler.extender_client import MAX_EXTENDER_PRIORITY, ExtenderClient, ExtenderError
from kubesim.scheduler.fit import (
    FIT_WEIGHT,
    MAX_NODE_SCORE,
    NodeFacts,
    NodeUsage,
    fit_error,
    fit_failure,
    gpu_score,
)
from kubesim.scheduler.nodetree import NodeTree, scan, scan_verdicts
from kubesim.scheduler.nominated import Nominations
from kubesim.scheduler.pods import GPU, pod_key, pod_requests
from kubesim.scheduler.preemption import priority
from kubesim.scheduler.verdicts import NodeTable


class Unschedulable(Exception):
    """No node fits the pod: `failed` has the reason of each node that failed (nodes not tried
    are absent), `in_tree` those the in-tree filters failed, `unresolvable` those the extender
    failed as unresolvable."""

    def __init__(
        self,
        message: str,
        failed: Mapping[str, str] | None = None,
        in_tree: Mapping[str, str] | None = None,
        unresolvable: AbstractSet[str] = frozenset(),
        by_extender: bool = False,
    ):
        super().__init__(message)
        self.failed: Mapping[str, str] = failed or {}
        self.in_tree: Mapping[str, str] = in_tree or {}
        self.unresolvable = unresolvable
        self.by_extender = by_extender
        """The extender rejected some nodes the in-tree filters passed."""

    def resolvable(self, node: str) -> bool:
        """Whether removing pods may cure the node's failure (it failed Unschedulable, not
        UnschedulableAndUnresolvable)."""
        if node not in self.failed or node in self.unresolvable:
            return False
        reason = self.in_tree.get(node)
        return reason is None or resolvable(reason)

    def resolvable_nodes(self) -> list[str]:
        """The nodes preemption may help on, in the order they were tried."""
        cured = {r: resolvable(r) for r in set(self.in_tree.values())}
        if all(cured.values()) and not self.unresolvable:
            return list(self.failed)
        return [
            n
            for n in self.failed
            if n not in self.unresolvable and cured.get(self.in_tree.get(n, ""), True)
        ]


def resolvable(reason: str) -> bool:
    """An in-tree failure that removing pods may cure: NodeResourcesFit's."""
    return reason == "Too many pods" or reason.startswith("Insufficient ")


@dataclass(frozen=True)
class Shape:
    """What the in-tree verdict on a node depends on, of the pod: its requests, its node
    constraints and its priority (nominated pods of a lower one are not counted)."""

    requests: Mapping[str, int]
    constraints: NodeConstraints
    priority: int
    deferred: frozenset[str] = frozenset()
    """Its extended resources DRA serves (fit_failure's `deferred`)."""

    @classmethod
    def of(cls, pod: Json, deferred: frozenset[str] = frozenset()) -> Shape:
        return cls(pod_requests(pod), NodeConstraints.of(pod), priority(pod), deferred)

    @property
    def key(self) -> Hashable:
        requests = tuple(sorted(self.requests.items()))
        return (requests, self.constraints.key, self.priority, self.deferred)


class Placement:
    """Reads the scheduler's node facts, node order and usage, which the scheduler keeps
    current; remembers where the in-tree pass stopped."""

    def __init__(
        self,
        config: SchedulerConfig,
        nodes: Mapping[str, NodeFacts],
        tree: NodeTree,
        usage: NodeUsage,
        clock: Clock,
        nominations: Nominations | None = None,
    ) -> None:
        self._config, self._nodes, self._tree, self._usage = config, nodes, tree, usage
        self._clock = clock
        self._nominations = nominations or Nominations()
        self._next_start = 0
        self._verdicts: dict[Hashable, dict[str, tuple[NodeFacts, int, str | None]]] = {}
        """Per pod shape: node -> (its facts, its usage's changes, the verdict then)."""
        self._tables: dict[Hashable, NodeTable[str | None]] = {}
        """Per pod shape: its verdict on every node, for a pod nominated nowhere."""
        self._gpu_scores: dict[int, NodeTable[int]] = {}
        """Per GPU count asked: the in-tree score of every node."""
        self._none_passed: dict[Hashable, tuple[tuple[int, int, int], dict[str, str]]] = {}
        """Per pod shape: the cluster's state when a whole pass found no node, and its reasons."""

    async def find_node(
        self,
        pod: Json,
        extender: ExtenderClient | None,
        claims: Callable[[str], str | None] | None = None,
        deferred: frozenset[str] = frozenset(),
    ) -> tuple[str, int]:
        """The node for the pod, and how many feasible nodes the in-tree pass sampled; `extender`
        None when the pod is not for the extender; `claims` the DynamicResources filter for a
        pod with resource claims or extended resources DRA serves (`deferred`, which
        NodeResourcesFit leaves to it). Raises Unschedulable, or ExtenderError when /filter
        failed."""
        started = self._clock.now()
        names = self._tree.list()
        if not names:
            raise Unschedulable("no nodes available to schedule pods")
        shape = Shape.of(pod, deferred)
        check = self.checker(pod, shape)
        if claims is not None:
            fit, dra = check, claims

            def check(name: str) -> str | None:
                return fit(name) or dra(name)

        failed: dict[str, str] = {}
        in_tree: dict[str, str] = {}
        unresolvable: set[str] = set()
        nominated = self._nominations.node_of(pod_key(pod))
        if nominated is not None and nominated in self._nodes:
            reason = check(nominated)
            if reason is None:
                found = [nominated]
                if extender is not None:
                    found = await extender.filter(pod, found, failed, unresolvable)
                if found:
                    # The cycle's own work (PreFilter, Reserve, Permit, ...) as any cycle's.
                    await self._spend(started)
                    return nominated, 1
            else:
                in_tree[nominated] = failed[nominated] = reason
        wanted = num_feasible_nodes_to_find(len(names), self._config.percentage_of_nodes_to_score)
        # A pass is kept only when its verdicts follow from the state _scan tracks: no
        # nomination of the pod's own, no claims (their allocations are state of their own).
        keep = nominated is None and claims is None
        feasible, scanned, processed = self._scan(shape, names, wanted, check, keep)
        in_tree.update(scanned)
        failed.update(scanned)
        self._next_start = (self._next_start + processed) % len(names)
        sampled = len(feasible)
        await self._spend(started)
        if feasible and extender is not None:
            feasible = await extender.filter(pod, feasible, failed, unresolvable)
        if not feasible:
            message = fit_error(len(names), failed)
            raise Unschedulable(message, failed, in_tree, unresolvable, sampled > 0)
        if len(feasible) == 1:
            return feasible[0], sampled
        scores = await self._scores(pod, feasible, pod_requests(pod), extender)
        return min(feasible, key=lambda n: (-scores[n], n)), sampled

    async def _spend(self, started: float) -> None:
        """What is left of the cycle's in-tree time since `started`."""
        if self._config.in_tree_time > 0:
            await self._clock.sleep(self._config.in_tree_time - (self._clock.now() - started))

    def _scan(
        self,
        shape: Shape,
        names: list[str],
        wanted: int,
        check: Callable[[str], str | None],
        keep: bool,
    ) -> tuple[list[str], dict[str, str], int]:
        """scan, or (with `keep`) its answer kept from a whole pass that found no node for this
        shape in the same cluster state."""
        state = (self._tree.version, self._usage.version, self._nominations.version)
        kept = self._none_passed.get(shape.key)
        if keep and kept is not None and kept[0] == state:
            return [], kept[1], len(names)
        if keep:
            verdicts = self._table(shape).current(self._tree, self._journals)
            feasible, failed, processed = scan_verdicts(names, verdicts, self._next_start, wanted)
        else:
            feasible, failed, processed = scan(names, self._next_start, wanted, check)
        if keep and not feasible:
            self._none_passed[shape.key] = (state, failed)
        return feasible, failed, processed

    @property
    def _journals(self) -> tuple[ChangeLog, ...]:
        return (self._tree.touched, self._usage.touched, self._nominations.touched)

    def _table(self, shape: Shape) -> NodeTable[str | None]:
        """The shape's verdict table: the judgement `checker` makes for a pod of the shape
        nominated nowhere (no node to leave out of the nominated pods it counts)."""
        table = self._tables.get(shape.key)
        if table is None:
            requests, constraints, mine = shape.requests, shape.constraints, shape.priority
            nodes, usage, nominations = self._nodes, self._usage, self._nominations

            def judge(name: str) -> str | None:
                used = _plus(usage.of(name), nominations.of(name, mine))
                return fit_failure(nodes[name], used, requests, constraints, shape.deferred)

            table = self._tables[shape.key] = NodeTable(judge)
        return table

    def _gpu_score_table(self, gpus: int) -> NodeTable[int]:
        table = self._gpu_scores.get(gpus)
        if table is None:
            nodes, usage, asked = self._nodes, self._usage, {GPU: gpus}

            def judge(name: str) -> int:
                return gpu_score(nodes[name], usage.of(name), asked)

            table = self._gpu_scores[gpus] = NodeTable(judge)
        return table

    def checker(self, pod: Json, shape: Shape) -> Callable[[str], str | None]:
        """The in-tree verdict on a node for the pod (None: it fits), nominated pods counted."""
        requests, constraints, mine = shape.requests, shape.constraints, shape.priority
        key = pod_key(pod)
        verdicts = self._verdicts.setdefault(shape.key, {})
        nodes, usage, counts = self._nodes, self._usage, self._usage.changes
        nominations, nominated_counts = self._nominations, self._nominations.changes
        own = nominations.node_of(key)

        def check(name: str) -> str | None:
            facts, known = nodes[name], verdicts.get(name)
            changes = counts.get(name, 0) + (nominated_counts.get(name, 0) << 32)
            if known is not None and known[1] == changes and known[0] is facts and name != own:
                return known[2]
            used = _plus(usage.of(name), nominations.of(name, mine, key))
            reason = fit_failure(facts, used, requests, constraints, shape.deferred)
            if name != own:
                verdicts[name] = (facts, changes, reason)
            return reason

        return check

    async def _scores(
        self,
        pod: Json,
        feasible: list[str],
        requests: Mapping[str, int],
        extender: ExtenderClient | None,
    ) -> dict[str, int]:
        """The in-tree score plus the extender's, scaled."""
        journals = (self._tree.touched, self._usage.touched)
        kept = self._gpu_score_table(requests.get(GPU, 0)).current(self._tree, journals)
        where = self._tree.positions()
        scores = {n: FIT_WEIGHT * kept[where[n]] for n in feasible}
        if extender is None:
            return scores
        scale = self._config.extender_weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        with contextlib.suppress(ExtenderError):
            for host, score in (await extender.prioritize(pod, feasible)).items():
                if host in scores:
                    scores[host] += score * scale
        return scores


def _plus(used: Mapping[str, int], more: Mapping[str, int]) -> Mapping[str, int]:
    if not more:
        return used
    total = dict(used)
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount
    return total
