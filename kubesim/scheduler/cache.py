"""The scheduler's cache: what it knows of each node and of the pods that hold or are promised
its resources.

As kube-scheduler's (pkg/scheduler/backend/cache and the nominator of its queue): the Nodes as
the filters see them, in nodeTree order; per node, what the pods bound or assumed there
request; the pods assumed on a node from the end of their scheduling cycle until the informer
shows them bound (or their bind failed); and the unbound pods nominated to a node by
preemption (`status.nominatedNodeName`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from kube_rdma.core.objects import Json
from kubesim.scheduler.fit import NodeFacts, NodeUsage, node_facts
from kubesim.scheduler.nodetree import NodeTree, zone_key
from kubesim.scheduler.nominated import Nominations
from kubesim.scheduler.pods import PodKey, bound_node, pod_key, pod_requests
from kubesim.scheduler.preemption import priority


class SchedulerCache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeFacts] = {}
        self.tree = NodeTree()
        self.usage = NodeUsage()
        self.assumed: dict[PodKey, str] = {}
        self.nominations = Nominations()
        self._placed: dict[PodKey, int] = {}
        self._priorities: Counter[int] = Counter()
        """How many placed pods (bound or assumed) have each priority."""

    def lowest_priority(self) -> int | None:
        """The lowest priority of a pod placed on a node; None when none is."""
        return min((p for p, n in self._priorities.items() if n), default=None)

    def labels(self, node: str) -> Mapping[str, str]:
        facts = self.nodes.get(node)
        return facts.labels if facts is not None else {}

    def node_changed(self, old: Json | None, new: Json | None) -> None:
        if new is None:
            assert old is not None
            name = str(old["metadata"]["name"])
            self.nodes.pop(name, None)
            self.tree.remove(name)
            return
        facts = node_facts(new)
        self.nodes[facts.name] = facts
        self.tree.upsert(facts.name, zone_key(new))

    def pod_changed(self, key: PodKey, new: Json | None, schedulable: bool) -> None:
        """The informer's new state of the pod (None: deleted); `schedulable`: it is one of
        this scheduler's pending pods."""
        if new is None or bound_node(new):
            self.assumed.pop(key, None)  # bound (the assumption confirmed) or gone
        self.account(key, new)
        node = None
        if new is not None and schedulable:
            node = (new.get("status") or {}).get("nominatedNodeName") or None
        if node != self.nominations.node_of(key):
            requests = pod_requests(new) if new is not None else {}
            self.nominations.set(key, node, priority(new or {}), requests)

    def account(self, key: PodKey, pod: Json | None) -> None:
        """The pod's requests counted on the node it is bound or assumed on, if any."""
        node = None if pod is None else bound_node(pod) or self.assumed.get(key)
        self.usage.place(key, node, pod_requests(pod) if pod is not None else {})
        old = self._placed.pop(key, None)
        if old is not None:
            self._priorities[old] -= 1
        if node is not None and pod is not None:
            self._placed[key] = priority(pod)
            self._priorities[self._placed[key]] += 1

    def pods_by_node(
        self, pods: Callable[[], Iterable[Json]]
    ) -> Callable[[], dict[str, list[Json]]]:
        """A function giving the pods on each node, bound or assumed, out of `pods()`."""

        def by_node() -> dict[str, list[Json]]:
            found: dict[str, list[Json]] = {}
            for pod in pods():
                node = bound_node(pod) or self.assumed.get(pod_key(pod))
                if node is not None:
                    found.setdefault(node, []).append(pod)
            return found

        return by_node
