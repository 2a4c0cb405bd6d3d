"""The order in which the scheduler walks the nodes, and the walk itself.

The order is the scheduler cache's nodeTree (pkg/scheduler/backend/cache/node_tree.go): zones
taken round-robin, each zone's nodes in the order they were added. The walk is
findNodesThatPassFilters (pkg/scheduler/schedule_one.go): it starts where the previous cycle
stopped (`nextStartNodeIndex`) and ends once enough feasible nodes are found, the index then
moving on by the nodes processed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kube_rdma.core.objects import Json


def zone_key(node: Json) -> str:
    """GetZoneKey (k8s.io/component-helpers/node/topology): region and zone, "" when neither."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels.get(
        "topology.kubernetes.io/zone", labels.get("failure-domain.beta.kubernetes.io/zone", "")
    )
    region = labels.get(
        "topology.kubernetes.io/region", labels.get("failure-domain.beta.kubernetes.io/region", "")
    )
    return f"{region}:\x00:{zone}" if region or zone else ""


class NodeTree:
    """The scheduler cache's node order: zones round-robin, each zone's nodes as added."""

    def __init__(self) -> None:
        self._zones: list[str] = []
        self._tree: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}
        self._list: list[str] | None = None
        self.version = 0
        """Moves at every upsert and removal: a node added, gone or changed."""

    def upsert(self, name: str, zone: str) -> None:
        self.version += 1
        if self._zone_of.get(name) == zone:
            return
        self.remove(name)
        if zone not in self._tree:
            self._zones.append(zone)
            self._tree[zone] = []
        self._tree[zone].append(name)
        self._zone_of[name] = zone
        self._list = None

    def remove(self, name: str) -> None:
        self.version += 1
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        self._tree[zone].remove(name)
        if not self._tree[zone]:
            del self._tree[zone]
            self._zones.remove(zone)
        self._list = None

    def list(self) -> list[str]:
        if self._list is None:
            columns = [self._tree[zone] for zone in self._zones]
            depth = max((len(c) for c in columns), default=0)
            self._list = [c[i] for i in range(depth) for c in columns if i < len(c)]
        return self._list


def scan(
    nodes: Sequence[str], start: int, wanted: int, check: Callable[[str], str | None]
) -> tuple[list[str], dict[str, str], int]:
    """The in-tree filter pass, one node at a time: from `start` round the list until `wanted`
    nodes passed `check` (None = passed, else the reason). The passing nodes, the reasons of the
    others, and how many nodes were processed."""
    feasible: list[str] = []
    failed: dict[str, str] = {}
    for i in range(len(nodes)):
        if len(feasible) >= wanted:
            break
        name = nodes[(start + i) % len(nodes)]
        reason = check(name)
        if reason is None:
            feasible.append(name)
        else:
            failed[name] = reason
    return feasible, failed, len(feasible) + len(failed)
