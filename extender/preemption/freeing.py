"""What evicting some pods frees on each node: their extended resources, and the devices of the
resource claims that go with them.

In a DRA cluster a pod's GPUs and NICs may be held by its ResourceClaims, not by its requests.
Kubernetes frees a claim's devices by clearing its `status.allocation` when the last pod in its
`status.reservedFor` is gone, and deletes a claim generated for a pod from a template (its
controller ownerReference is that pod) with the pod, which frees it the same way (kubernetes
pkg/controller/resourceclaim/controller.go, syncClaim and owningPod). So a claim reserved for
pods that stay frees nothing, and an `adminAccess` result holds nothing to free (k8s.io/api
resource/v1 DeviceRequestAllocationResult.AdminAccess). A claim reserved for a PodGroup
(scheduling.k8s.io, extender/cluster/claims.py) stays allocated while the PodGroup exists, so
evicting its pods frees nothing of it.

A DRA GPU counts as one unit of the extender's GPU resource and a NIC as one of `rdma/hca`
(extender/cluster/devices.py), so what is freed is told in the resources device-plugin pods
request, and preemption decides alike on either kind of node.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from extender.cluster.claims import claim_names
from extender.cluster.devices import DraNames
from extender.cluster.model import Cluster, NodeInfo
from extender.cluster.pods import pod_requests
from extender.preemption.priority import SharedClaim
from kube_rdma.core.dra.index import ObjectKey
from kube_rdma.core.dra.shapes import DeviceId, allocated_devices, reserved_for
from kube_rdma.core.objects import Json

Amounts = dict[str, int]


def owning_pod(claim: Json) -> str | None:
    """The UID of the pod the claim was generated for: its controller ownerReference of kind
    Pod (the ResourceClaim controller's owningPod)."""
    for owner in (claim.get("metadata") or {}).get("ownerReferences") or []:
        if (
            isinstance(owner, dict)
            and owner.get("controller") is True
            and owner.get("apiVersion") == "v1"
            and owner.get("kind") == "Pod"
        ):
            return str(owner.get("uid") or "")
    return None


def claim_users(claim: Json) -> frozenset[str]:
    """The UIDs of the pods whose going together frees the claim: those it is reserved for,
    else the pod it was generated for (the garbage collector deletes it with that pod, and its
    finalizer clears the allocation); none for a claim not allocated, or never freed by
    evicting pods."""
    if not (claim.get("status") or {}).get("allocation"):
        return frozenset()
    users = frozenset(reserved_for(claim))
    owner = owning_pod(claim)
    return users or (frozenset({owner}) if owner else frozenset())


def claim_freed(claim: Json, leaving: Collection[str]) -> bool:
    """Whether the claim's allocation is cleared once the pods with the UIDs `leaving` are
    gone."""
    users = claim_users(claim)
    return bool(users) and users <= set(leaving)


@dataclass(frozen=True)
class Freed:
    """What evicting a set of pods frees, per node."""

    resources: dict[str, Amounts]
    """node -> extended resources freed, DRA devices counted as their resource's units."""
    devices: dict[str, frozenset[DeviceId]]
    """node -> the DRA devices freed."""
    shared: tuple[SharedClaim, ...] = ()
    """The claims of the pods that the pods of others must leave too to free."""


class Freeing:
    def __init__(self, cluster: Cluster, names: DraNames) -> None:
        self._cluster = cluster
        self._names = names

    def freed(self, pods: Iterable[Json]) -> Freed:
        """What evicting every pod of `pods` (bound ones) frees."""
        pods = list(pods)
        resources: dict[str, Amounts] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                _add(resources.setdefault(str(node), {}), pod_requests(pod))
        devices, shared = self._devices(pods)
        for node, ids in devices.items():
            _add(resources.setdefault(node, {}), self._as_resources(node, ids))
        return Freed(resources, devices, tuple(shared))

    def without(self, node: NodeInfo, pods: Iterable[Json]) -> NodeInfo:
        """The node as it would be once `pods` are gone (their claims freed as above)."""
        freed = self.freed(pods)
        requested = dict(node.requested)
        for resource, amount in freed.resources.get(node.name, {}).items():
            requested[resource] = requested.get(resource, 0) - amount
        devices = node.devices
        if devices is not None and node.name in freed.devices:
            devices = replace(devices, held=devices.held - freed.devices[node.name])
        return replace(node, requested=requested, state=0, devices=devices)

    def _devices(
        self, pods: list[Json]
    ) -> tuple[dict[str, frozenset[DeviceId]], list[SharedClaim]]:
        leaving = {uid for pod in pods if (uid := _uid(pod))}
        found: dict[str, set[DeviceId]] = {}
        shared = []
        for key in _claims_of(pods, self._cluster):
            claim = self._cluster.dra.claims.get(key)
            node = self._cluster.dra.claim_node(key)
            users = claim_users(claim) if claim is not None else frozenset()
            if claim is None or node is None or not users:
                continue
            held = frozenset(device for device, admin in allocated_devices(claim) if not admin)
            if users <= leaving:
                found.setdefault(node, set()).update(held)
            else:
                name = f"{key[0]}/{key[1]}"
                shared.append(SharedClaim(name, node, self._as_resources(node, held), users))
        return {node: frozenset(ids) for node, ids in found.items()}, shared

    def _as_resources(self, node: str, ids: frozenset[DeviceId]) -> Amounts:
        info = self._cluster.node(node)
        published = info.devices.devices if info is not None and info.devices else ()
        names = {"gpu": self._names.gpu, "nic": self._names.nic}
        amounts: Amounts = {}
        for device, kind in published:
            if device.id in ids:
                _add(amounts, {names[kind]: 1})
        return amounts


def emptied(node: NodeInfo) -> NodeInfo:
    """The node with nothing running on it: no requests, no DRA device held."""
    devices = node.devices
    if devices is not None:
        devices = replace(devices, held=frozenset())
    return replace(node, requested={}, state=0, devices=devices)


def _claims_of(pods: list[Json], cluster: Cluster) -> list[ObjectKey]:
    """Each claim the pods use, once (those their PodGroup owns too)."""
    found: dict[ObjectKey, None] = {}
    for pod in pods:
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        for name in claim_names(pod, cluster.native.claims_of(pod))[0]:
            found[namespace, name] = None
    return list(found)


def _uid(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def _add(total: Amounts, amounts: Amounts) -> None:
    for resource, amount in amounts.items():
        total[resource] = total.get(resource, 0) + amount
