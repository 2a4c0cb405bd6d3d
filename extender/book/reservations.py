"""What gang plans hold: the nodes each plan chose, the capacity held there for members not yet
bound, and which pods are members of a planned gang.

The planner writes this book; the engine and the locality scorer read it through `GangPlans`,
a read-only view they are given at construction. The engine counts what other gangs hold as
used on a node; the locality score keeps a member on its plan's nodes and other pods away from
the domains plans are filling. Neither needs to know the planner exists.

Which domain a plan fences off from other pods is its gang's own: the domain it fills at the
narrowest level the gang is planned over (its NVLink domain for a gang that requires one, the
leaf for a gang that asks nothing), told by the planner with each plan it holds
(extender/gangs/fences.py); a plan that had to go wider fences only the nodes it holds. A plan
held without one fences its domain under the narrowest label.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from enum import Enum
from typing import Literal, Protocol

from extender.cluster.model import NodeInfo
from extender.cluster.pods import PodKey

GangKey = tuple[str, str]
"""(namespace, name) of a gang."""
Fence = tuple[tuple[str, ...], str]
"""A domain a plan fences off: the node labels that name its level (the first a node carries
counts), and its value."""


class _Narrowest(Enum):
    FENCE = "narrowest"


NARROWEST: Literal[_Narrowest.FENCE] = _Narrowest.FENCE
"""The fence of a plan held without one: its domain under the narrowest label."""


class GangPlans(Protocol):
    """Read-only: what the gang plans in force hold."""

    @property
    def held_nodes(self) -> Collection[str]:
        """Nodes on which some plan holds capacity."""
        ...

    @property
    def version(self) -> int:
        """A number that changes whenever what plans hold or fence changes: answers computed
        from the plans are kept while it stays the same."""
        ...

    def held(self, node: str, gang: GangKey | None = None) -> dict[str, int]:
        """Resources the plans of gangs other than `gang` hold on the node."""
        ...

    def active(self) -> bool:
        """Whether any gang is planned."""
        ...

    def member_gang(self, pod: PodKey) -> GangKey | None:
        """The gang a pod was filtered as a member of, while that gang is being placed."""
        ...

    def planned_nodes(self, gang: GangKey) -> Collection[str] | None:
        """The nodes the gang's plan chose; None when the gang has no plan."""
        ...

    def fenced(self, node: NodeInfo) -> bool:
        """Whether the node lies in a domain some plan fills at its gang's narrowest level."""
        ...


class NoPlans:
    """The view where no gang is ever planned: an engine without gang placement."""

    held_nodes: Collection[str] = frozenset()
    version = 0

    def held(self, node: str, gang: GangKey | None = None) -> dict[str, int]:
        return {}

    def active(self) -> bool:
        return False

    def member_gang(self, pod: PodKey) -> GangKey | None:
        return None

    def planned_nodes(self, gang: GangKey) -> Collection[str] | None:
        return None

    def fenced(self, node: NodeInfo) -> bool:
        return False


NO_PLANS = NoPlans()


class Reservations:
    """The book the planner keeps; a `GangPlans` for everyone else."""

    def __init__(self, narrowest_label: str | None) -> None:
        self._label = narrowest_label
        self._fences: dict[GangKey, Fence] = {}
        self._fenced: dict[tuple[str, ...], frozenset[str]] = {}
        """Node labels -> the values plans fence under them (what `fenced` reads)."""
        self.by_node: dict[str, dict[GangKey, dict[str, int]]] = {}
        """node -> gang -> resources held for the gang's members not yet bound there."""
        self._plans: dict[GangKey, tuple[str, frozenset[str]]] = {}
        self._members: dict[PodKey, GangKey] = {}
        self._domains: frozenset[str] = frozenset()
        self._version = 0

    # Writes: the planner's

    def join(self, pod: PodKey, gang: GangKey) -> None:
        self._members[pod] = gang

    def hold(
        self,
        gang: GangKey,
        domain: str,
        nodes: Iterable[str],
        pending: Iterable[str],
        need: Mapping[str, int],
        fence: Fence | Literal[_Narrowest.FENCE] | None = NARROWEST,
    ) -> None:
        """Record the gang's plan, holding `need` once per pending slot (a node per member),
        and fencing `fence` (None: nothing)."""
        self._unhold(gang)
        self._version += 1
        self._plans[gang] = (domain, frozenset(nodes))
        self._domains = frozenset(domain for domain, _ in self._plans.values())
        self._fence(gang, self._narrowest_fence(domain) if fence is NARROWEST else fence)
        for node in pending:
            held = self.by_node.setdefault(node, {}).setdefault(gang, {})
            for resource, amount in need.items():
                if amount > 0:
                    held[resource] = held.get(resource, 0) + amount

    def settle(self, gang: GangKey, node: str, need: Mapping[str, int]) -> None:
        """A member was bound on `node`: what was held there for it is now real usage."""
        held = (self.by_node.get(node) or {}).get(gang)
        if held is None:
            return
        self._version += 1
        for resource, amount in need.items():
            if resource in held:
                held[resource] -= amount
                if held[resource] <= 0:
                    del held[resource]
        if not held:
            del self.by_node[node][gang]
            if not self.by_node[node]:
                del self.by_node[node]

    def release(self, gang: GangKey) -> None:
        """Forget the gang's plan, what it holds and its members."""
        self._version += 1
        self._plans.pop(gang, None)
        self._domains = frozenset(domain for domain, _ in self._plans.values())
        self._fence(gang, None)
        self._unhold(gang)
        for member in [k for k, g in self._members.items() if g == gang]:
            del self._members[member]

    def _fence(self, gang: GangKey, fence: Fence | None) -> None:
        if fence is None:
            self._fences.pop(gang, None)
        else:
            self._fences[gang] = fence
        grouped: dict[tuple[str, ...], set[str]] = {}
        for labels, value in self._fences.values():
            grouped.setdefault(labels, set()).add(value)
        self._fenced = {labels: frozenset(values) for labels, values in grouped.items()}

    def _narrowest_fence(self, domain: str) -> Fence | None:
        return None if self._label is None else ((self._label,), domain)

    def _unhold(self, gang: GangKey) -> None:
        for node in list(self.by_node):
            self.by_node[node].pop(gang, None)
            if not self.by_node[node]:
                del self.by_node[node]

    # Reads: GangPlans

    @property
    def held_nodes(self) -> Collection[str]:
        return self.by_node

    @property
    def version(self) -> int:
        return self._version

    def held(self, node: str, gang: GangKey | None = None) -> dict[str, int]:
        total: dict[str, int] = {}
        for owner, resources in (self.by_node.get(node) or {}).items():
            if owner != gang:
                for resource, amount in resources.items():
                    total[resource] = total.get(resource, 0) + amount
        return total

    def active(self) -> bool:
        return bool(self._plans)

    def member_gang(self, pod: PodKey) -> GangKey | None:
        return self._members.get(pod)

    def planned_nodes(self, gang: GangKey) -> Collection[str] | None:
        plan = self._plans.get(gang)
        return None if plan is None else plan[1]

    def domains(self) -> Collection[str]:
        """The network domains the plans in force fill."""
        return self._domains

    def fenced(self, node: NodeInfo) -> bool:
        for labels, values in self._fenced.items():
            value = next((node.labels[k] for k in labels if node.labels.get(k)), None)
            if value is not None and value in values:
                return True
        return False
