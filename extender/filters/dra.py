"""DRA: whether the node's free GPUs and RDMA NICs can satisfy what the pod's resource claims
ask, with their DeviceClass and request CEL selectors and the claims' `matchAttribute` and
`distinctAttribute` constraints, and whether a claim already allocated elsewhere ties the pod
to another node. These are nodes kube-scheduler's DynamicResources
filter refuses too; the extender says so itself, in its own answer and in explain.

The counts alone are judged by the RDMA filter, which runs first and reads a DRA node's devices
as extended resources, so a device-plugin node and a DRA node that are short of GPUs fail with
the same message.
"""

from __future__ import annotations

from extender.cluster.model import NodeInfo
from extender.filters.verdict import PASS, Verdict, fail, never
from extender.pairing import Rails
from extender.podview import PodView
from kube_rdma.core.dra.allocate import Refusal, allocate


def served(pod: PodView, node: NodeInfo, rails: Rails | None) -> Verdict:
    """A container's request for `nvidia.com/gpu` or `rdma/hca` on a node that has them only as
    DRA devices no DeviceClass serves by that name (`extendedResourceName`): kube-scheduler's
    NodeResourcesFit finds too little of the resource there, however many devices are free."""
    if not node.claims_only:
        return PASS
    for resource, amount in pod.in_containers:
        only = node.claims_only.get(resource, 0)
        if only and amount > node.allocatable.get(resource, 0) - only:
            return never(
                f"the node has its {resource} only as DRA devices, and no DeviceClass serves "
                f"{resource} (extendedResourceName): ask for them through a resource claim"
            )
    return PASS


def check(pod: PodView, node: NodeInfo, rails: Rails | None) -> Verdict:
    demand = pod.demand
    if (not demand.requests and not demand.pinned) or pod.selectors is None:
        return PASS
    result = allocate(demand, node.name, node.devices, pod.selectors)
    if isinstance(result, Refusal):
        reason = f"DRA would refuse: {result.reason}"
        return fail(reason) if result.resolvable else never(reason)
    return PASS
