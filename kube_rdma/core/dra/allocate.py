"""Whether a node's free GPUs and NICs can satisfy a pod's pending device requests, and which
devices they would get.

The requests are taken in order, each choice of a `firstAvailable` list in order, and each
takes the first free devices its selectors match, as kube-scheduler's allocator tries them
(k8s.io/dynamic-resource-allocation/structured, allocator.go). The allocator backtracks when a
later request cannot be met; this does not, which can only refuse a node the allocator would
accept when requests of one pod overlap. `matchAttribute` constraints are not checked: the
DynamicResources filter applies them, and the extender's scores rank the nodes it passes by
PCIe level from the agent's topology.
"""

from __future__ import annotations

from dataclasses import dataclass

from kube_rdma.core.dra.demand import Choice, DeviceRequest, PodDemand
from kube_rdma.core.dra.index import NodeDevices
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.dra.shapes import DeviceId


@dataclass(frozen=True)
class Allocation:
    devices: dict[tuple[str, str], tuple[DeviceId, ...]]
    """(claim, request) -> the devices it gets."""


@dataclass(frozen=True)
class Refusal:
    reason: str
    resolvable: bool
    """True when freeing devices on the node could make room."""


def allocate(
    demand: PodDemand, node_name: str, node: NodeDevices | None, selectors: Selectors
) -> Allocation | Refusal:
    for claim, pinned in demand.pinned:
        if pinned != node_name:
            return Refusal(f"claim {claim} is allocated on node {pinned}", resolvable=False)
    taken: set[DeviceId] = set()
    picks: dict[tuple[str, str], tuple[DeviceId, ...]] = {}
    for request in demand.requests:
        found = _first_fit(request, node, taken, selectors)
        if isinstance(found, Refusal):
            return found
        taken.update(found)
        picks[request.claim, request.request] = found
    return Allocation(picks)


def _first_fit(
    request: DeviceRequest, node: NodeDevices | None, taken: set[DeviceId], selectors: Selectors
) -> tuple[DeviceId, ...] | Refusal:
    refusals = []
    for choice in request.choices:
        found = _fit(choice, node, taken, selectors)
        if not isinstance(found, Refusal):
            return found
        refusals.append(found)
    first = refusals[0]
    label = f"claim {request.claim} request {request.request}: "
    return Refusal(label + first.reason, all(r.resolvable for r in refusals))


def _fit(
    choice: Choice, node: NodeDevices | None, taken: set[DeviceId], selectors: Selectors
) -> tuple[DeviceId, ...] | Refusal:
    kind = "GPU" if choice.kind == "gpu" else "RDMA NIC"
    matching = [
        d
        for d, k in (node.devices if node else ())
        if k == choice.kind and selectors.matches(choice.selectors, d)
    ]
    held = node.held if node else frozenset()
    free = [d.id for d in matching if d.id not in held and d.id not in taken]
    if choice.all_devices:
        if not matching:
            return Refusal(f"no matching {kind} published (allocationMode All)", False)
        if len(free) < len(matching):
            busy = len(matching) - len(free)
            return Refusal(f"{busy} of {len(matching)} matching {kind}s in use (All)", True)
        return tuple(free)
    if len(matching) < choice.count:
        return Refusal(
            f"node publishes {len(matching)} matching {kind}(s), needs {choice.count}", False
        )
    if len(free) < choice.count:
        return Refusal(
            f"{len(free)} of {len(matching)} matching {kind}(s) free, needs {choice.count}", True
        )
    return tuple(free[: choice.count])
