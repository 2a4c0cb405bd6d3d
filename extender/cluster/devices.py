"""DRA devices in the cluster model: a node's published GPUs and RDMA NICs count as its
extended resources, so that every filter, score and gang plan reads one set of numbers
whichever way the devices are published.

A DRA GPU counts as one unit of the extender's first GPU resource (`nvidia.com/gpu`), an RDMA
NIC as one unit of `rdma/hca`, the names kube-rdma's device-plugin clusters use for the same
hardware (a NIC per unit), and a device an allocated claim holds counts as requested. A pod
that asks for `nvidia.com/gpu` or `rdma/hca` in its containers can have such devices only where
a DeviceClass names the resource as its `extendedResourceName` (KEP-5004, alpha in 1.34; the
apiserver drops the field while the feature is off): elsewhere kube-scheduler's NodeResourcesFit
finds none of it on a DRA-only node, so the model keeps, per node, the part of each resource
that only claims can have (`NodeInfo.claims_only`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kube_rdma.core.dra.index import NodeDevices
from kube_rdma.core.dra.kinds import Kind
from kube_rdma.core.dra.taints import BLOCKING

DRA_NIC_RESOURCE = "rdma/hca"

# Attributes that tell devices apart, not what they are: two nodes whose devices differ only in
# these share verdicts and scores (the engine keys its answers by node state).
_IDENTITY = frozenset(
    {
        "uuid",
        "pcieBusID",
        "pciBusID",
        "pciAddress",
        "mac",
        "ipv4",
        "ipv6",
        "pfPciAddress",
    }
)


@dataclass(frozen=True)
class DraNames:
    gpu: str = "nvidia.com/gpu"
    nic: str = DRA_NIC_RESOURCE


DEFAULT_DRA_NAMES = DraNames()


def add_devices(
    allocatable: dict[str, int],
    requested: dict[str, int],
    devices: NodeDevices | None,
    names: DraNames,
) -> dict[str, int]:
    """Adds the node's DRA devices to its extended resources, in place; returns what it added
    to `allocatable`."""
    added: dict[str, int] = {}
    if devices is None:
        return added
    kinds: list[tuple[Kind, str]] = [("gpu", names.gpu), ("nic", names.nic)]
    for kind, resource in kinds:
        total = devices.count(kind)
        if total:
            added[resource] = total
            allocatable[resource] = allocatable.get(resource, 0) + total
            used = devices.in_use(kind)
            if used:
                requested[resource] = requested.get(resource, 0) + used
    return added


def withheld(devices: NodeDevices | None, names: DraNames) -> dict[str, str]:
    """By extended resource, the node's GPUs or RDMA NICs that a NoSchedule or NoExecute taint
    keeps out of its count (no request tolerates a taint by default), described: a gang plan
    does not count them, and a refusal for too few says why."""
    if devices is None:
        return {}
    found: dict[str, list[str]] = {}
    for device, kind in devices.published:
        blocking = [t.describe() for t in device.taints if t.effect in BLOCKING]
        if kind is not None and blocking:
            resource = names.gpu if kind == "gpu" else names.nic
            found.setdefault(resource, []).append(f"{device.name} tainted {', '.join(blocking)}")
    return {r: "; ".join(shown) for r, shown in found.items()}


def signature(devices: NodeDevices | None) -> Any:
    """What the DRA filter reads of a node's devices (attributes and capacities, which selectors
    compare), without their identities."""
    if devices is None:
        return None
    return (
        tuple(
            (
                d.name,
                kind,
                d.id in devices.held,
                _described(d.attributes),
                tuple(sorted(d.capacity.items())),
                d.taints,
                d.consumes,
            )
            for d, kind in devices.published
        ),
        devices.notes,
        devices.counter_sets,
    )


def _described(attributes: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(
        sorted((n, v) for n, v in attributes.items() if n.rpartition("/")[2] not in _IDENTITY)
    )
