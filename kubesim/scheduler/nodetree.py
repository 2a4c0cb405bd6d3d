"""The order in which the scheduler walks the nodes, and the walk itself.

The order is the scheduler cache's nodeTree (pkg/scheduler/backend/cache/node_tree.go): zones
taken round-robin, each zone's nodes in the order they were added. The walk is
findNodesThatPassFilters (pkg/scheduler/schedule_one.go): it starts where the previous cycle
stopped (`nextStartNodeIndex`) and ends once enough feasible nodes are found, the index then
moving on by the nodes processed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from typing import cast

from kube_rdma.core.objects import Json
from kubesim.scheduler.changes import ChangeLog


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
        self._positions: dict[str, int] | None = None
        self.version = 0
        """Moves at every upsert and removal: a node added, gone or changed."""
        self.layout = 0
        """Moves whenever `list()` does: a node added, gone or moved to another zone."""
        self.touched = ChangeLog()
        """The nodes upserted, in order (a node's facts may have changed in place)."""

    def upsert(self, name: str, zone: str) -> None:
        self.version += 1
        self.touched.add(name)
        if self._zone_of.get(name) == zone:
            return
        self.remove(name)
        if zone not in self._tree:
            self._zones.append(zone)
            self._tree[zone] = []
        self._tree[zone].append(name)
        self._zone_of[name] = zone
        self._list = self._positions = None
        self.layout += 1

    def remove(self, name: str) -> None:
        self.version += 1
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        self._tree[zone].remove(name)
        if not self._tree[zone]:
            del self._tree[zone]
            self._zones.remove(zone)
        self._list = self._positions = None
        self.layout += 1

    def list(self) -> list[str]:
        if self._list is None:
            columns = [self._tree[zone] for zone in self._zones]
            depth = max((len(c) for c in columns), default=0)
            self._list = [c[i] for i in range(depth) for c in columns if i < len(c)]
        return self._list

    def positions(self) -> dict[str, int]:
        """Each node's place in `list()`."""
        if self._positions is None:
            self._positions = {name: at for at, name in enumerate(self.list())}
        return self._positions


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


def scan_verdicts(
    nodes: Sequence[str], verdicts: Sequence[str | None], start: int, wanted: int
) -> tuple[list[str], dict[str, str], int]:
    """`scan` where each node's verdict is already known (`verdicts[i]` is `nodes[i]`'s): the
    same feasible nodes, reasons (in the order the walk meets them) and count processed, built a
    list at a time rather than a call per node."""
    count = len(nodes)
    if wanted <= 0 or count == 0:
        return [], {}, 0
    first = start % count
    names = [*nodes[first:], *nodes[:first]]
    marks = [*verdicts[first:], *verdicts[:first]]
    passed = list(map(operator.is_, marks, repeat(None)))
    processed = count
    if passed.count(True) >= wanted:  # the walk stops at the wanted-th feasible node
        processed = list(compress(range(count), passed))[wanted - 1] + 1
        del names[processed:], marks[processed:], passed[processed:]
    feasible = list(compress(names, passed))
    reasons = compress(zip(names, marks, strict=True), map(operator.not_, passed))
    failed = cast(dict[str, str], dict(reasons))
    return feasible, failed, processed
