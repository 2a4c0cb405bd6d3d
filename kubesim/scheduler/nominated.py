"""Pods nominated to a node by preemption, as the scheduler's filters count them.

kube-scheduler runs its filters with the nominated pods of equal or higher priority added to
the node (pkg/scheduler/schedule_one.go and framework/runtime, RunFilterPluginsWithNominatedPods;
the pod itself is never counted against itself), so that the room a preemption freed is not
taken by a lower-priority pod before the preemptor comes back for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesim.scheduler.changes import ChangeLog
from kubesim.scheduler.pods import PodKey


class Nominations:
    def __init__(self) -> None:
        self._pods: dict[PodKey, tuple[str, int, dict[str, int]]] = {}
        self._by_node: dict[str, set[PodKey]] = {}
        self.changes: dict[str, int] = {}
        """Per node, a count that moves whenever its nominations do (absent: 0)."""
        self.version = 0
        """Moves whenever any node's nominations do."""
        self.touched = ChangeLog()
        """The nodes whose nominations moved, in order."""

    def node_of(self, key: PodKey) -> str | None:
        found = self._pods.get(key)
        return found[0] if found is not None else None

    def on(self, node: str) -> list[tuple[PodKey, int]]:
        """The pods nominated to `node`, with their priorities."""
        return [(key, self._pods[key][1]) for key in sorted(self._by_node.get(node, ()))]

    def set(
        self, key: PodKey, node: str | None, priority: int = 0, requests: Mapping[str, int] = {}
    ) -> None:
        """The pod nominated to `node` (None: to none)."""
        current = self._pods.pop(key, None)
        if current is not None:
            self._by_node[current[0]].discard(key)
            self._bump(current[0])
        if node is not None:
            self._pods[key] = (node, priority, {**requests, "pods": 1})
            self._by_node.setdefault(node, set()).add(key)
            self._bump(node)

    def of(self, node: str, priority: int, exclude: PodKey | None = None) -> dict[str, int]:
        """What the pods nominated to `node` with at least `priority` request, `exclude` aside."""
        total: dict[str, int] = {}
        for key in self._by_node.get(node, ()):
            _, their_priority, requests = self._pods[key]
            if key != exclude and their_priority >= priority:
                for name, amount in requests.items():
                    total[name] = total.get(name, 0) + amount
        return total

    def _bump(self, node: str) -> None:
        self.version += 1
        self.changes[node] = self.changes.get(node, 0) + 1
        self.touched.add(node)
