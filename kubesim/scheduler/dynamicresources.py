"""kube-scheduler's DynamicResources plugin, as far as the emulator needs it for pods whose GPUs
and NICs come from resource claims (kubernetes pkg/scheduler/framework/plugins/
dynamicresources):

- Filter: a node passes when the pod's pending claims can be allocated from its free devices
  (kube_rdma/core/dra: pools, CEL selectors, the allocator's search with the claims'
  constraints), and a claim already allocated ties the
  pod to that claim's node;
- Reserve: the allocation chosen is kept in flight, so the next pods see those devices taken
  (a shared device, one that allows multiple allocations: the capacity its results consume);
- PreBind: each claim's `status.allocation` is written (for a claim not allocated yet; a
  result on a shared device with a `shareID` and its `consumedCapacity`) and the pod added to
  its `status.reservedFor`, before the bind call;
- Unreserve, when the bind fails: the pod is removed from `reservedFor` (a strategic-merge
  patch upstream; an update of the status here), the allocation left written;
- PostFilter, when no node took the pod: one of its claims that is allocated and reserved for
  no other pod is deallocated, so that the pod is not tied to that claim's node for ever
  (upstream at the end of the failed cycle; here at the start of the pod's next cycle, before
  its filters).

Extended resources a DeviceClass serves (`extendedResourceName`, KEP-5004, DRAExtendedResource:
the apiserver keeps the field only while the feature is on): a pod asking for such a resource in
its containers, on a node whose allocatable has none of it, is judged here rather than by
NodeResourcesFit, which passes it (kubesim/scheduler/fit.py): the node fits when the class's
devices there, less those claims hold and those the pods already placed there ask for by that
name, cover the request (`extended_checker`). Simplification: no special ResourceClaim is
made for such a pod (upstream's PreBind writes one, annotated
`resource.kubernetes.io/extended-resource-claim`): its devices are counted, not named, so a
claim pod's allocation on the same node does not see them taken.

The ResourceClaim controller's part is played too: before a pod's first cycle, a claim is made
from each of its `resourceClaimTemplateName` entries (named `<pod>-<entry>-<5 letters>`, owned
by the pod) and named in the pod's `status.resourceClaimStatuses`
(kubernetes pkg/controller/resourceclaim, controller.go handleClaim).

A device a ResourceSlice or a DeviceTaintRule taints is allocated only to requests that tolerate
the taint (kube_rdma/core/dra/taints.py), as with DRADeviceTaints on.

Simplifications: the DRA objects are listed again before each cycle of a pod with claims (the
emulator's clusters are small) rather than watched.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from kube_rdma.core.dra.allocate import Allocation, Refusal, allocate
from kube_rdma.core.dra.capacity import Amounts, add
from kube_rdma.core.dra.demand import pod_demand
from kube_rdma.core.dra.index import DraIndex, NodeDevices
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.dra.shapes import DeviceId
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import NotFound
from kubesim.scheduler.pods import PodKey, pod_key, pod_requests

SetStatus = Callable[[str, str, Json], Awaitable[Json]]
"""Merges a status into a pod's (ApiCalls.patch_pod_status)."""
RULES = "devicetaintrules"
RULE_VERSIONS = ("v1", "v1beta2", "v1alpha3")
PLURALS = ("resourceslices", "deviceclasses", "resourceclaims", "resourceclaimtemplates", RULES)
CANNOT_ALLOCATE = "cannot allocate all claims"
"""DynamicResources' Filter failure, for the devices of an extended resource it serves too."""


class DraCalls(Protocol):
    """resource.k8s.io as the emulator reads and writes it."""

    async def list(self, plural: str) -> list[Json]: ...

    async def get_claim(self, namespace: str, name: str) -> Json: ...

    async def update_claim_status(self, namespace: str, name: str, claim: Json) -> Json: ...

    async def create_claim(self, namespace: str, claim: Json) -> Json: ...


class DynamicResources:
    def __init__(self, calls: DraCalls) -> None:
        self._calls = calls
        self._index = DraIndex()
        self._selectors = Selectors()
        self._in_flight: dict[PodKey, tuple[str, Allocation]] = {}
        self._made: dict[PodKey, list[Json]] = {}
        """The claims made for a pod from its templates, before the informer shows them."""
        self._unplaced: set[PodKey] = set()
        """Pods whose last cycle found no node (filtered, never reserved)."""
        self._listed = False

    async def served(self, pod: Json) -> dict[str, int]:
        """What the pod asks in its containers of extended resources a DeviceClass serves
        (KEP-5004), with the claims as they are now when it asks any."""
        if not self._listed:
            await self.refresh()
        names = self._index.extended_resources()
        asked = {r: n for r, n in pod_requests(pod).items() if r in names} if names else {}
        if asked:
            self._index.replace_claims(await self._calls.list("resourceclaims"))
        return asked

    def extended_checker(
        self,
        asked: Mapping[str, int],
        allocatable: Callable[[str], Mapping[str, int]],
        used: Callable[[str], Mapping[str, int]],
    ) -> Callable[[str], str | None]:
        """Filter for the extended resources DRA serves (`served`): on a node with none of a
        resource in its allocatable, enough free devices of the class naming it, beyond what
        the pods placed there ask for by that name (`used`)."""
        classes = sorted(self._index.classes.values(), key=lambda c: c.name)
        serving = {r: next(c for c in classes if c.extended_resource == r) for r in asked}
        taken = self._taken()

        def check(name: str) -> str | None:
            node = self._index.node(name)
            for resource, amount in asked.items():
                if allocatable(name).get(resource, 0):
                    continue  # a device plugin's: NodeResourcesFit judged it
                expressions = serving[resource].selectors
                free = 0
                if node is not None:
                    free = sum(
                        1
                        for device in node.free()
                        if device.id not in taken and self._selectors.matches(expressions, device)
                    )
                if free - used(name).get(resource, 0) < amount:
                    return CANNOT_ALLOCATE
            return None

        return check

    @staticmethod
    def wants(pod: Json) -> bool:
        return bool((pod.get("spec") or {}).get("resourceClaims"))

    async def refresh(self) -> None:
        index = DraIndex()
        index.replace_slices(await self._calls.list("resourceslices"))
        for obj in await self._calls.list("deviceclasses"):
            index.upsert_class(obj)
        for obj in await self._calls.list("resourceclaimtemplates"):
            index.upsert_template(obj)
        index.replace_claims(await self._calls.list("resourceclaims"))
        index.replace_taint_rules(await self._calls.list("devicetaintrules"))
        self._index = index
        self._listed = True

    async def claims_made(self, pod: Json, set_status: SetStatus) -> Json:
        """The pod with a claim made from each of its templates that has none yet (the
        ResourceClaim controller's work), its status naming them."""
        if pod_key(pod) in self._unplaced:
            self._unplaced.discard(pod_key(pod))
            await self._post_filter(pod)
        generated = {
            s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        }
        made = []
        namespace, name = pod_key(pod)
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            template = entry.get("resourceClaimTemplateName")
            if not template or entry.get("name") in generated:
                continue
            source = self._index.templates.get((namespace, str(template)))
            if source is None:
                continue  # kube-scheduler waits for it; the DRA filter says it is missing
            claim = await self._calls.create_claim(namespace, _from_template(pod, entry, source))
            made.append({"name": entry["name"], "resourceClaimName": claim["metadata"]["name"]})
        if not made:
            return pod
        statuses = [*((pod.get("status") or {}).get("resourceClaimStatuses") or []), *made]
        updated = await set_status(namespace, name, {"resourceClaimStatuses": statuses})
        self._made[namespace, name] = statuses
        await self.refresh()
        return updated

    def checker(self, pod: Json) -> Callable[[str], str | None]:
        """Filter: why a node cannot take the pod's claims (None: it can)."""
        demand = pod_demand(pod, self._index, self._selectors)
        taken = self._taken()
        self._unplaced.add(pod_key(pod))

        def check(name: str) -> str | None:
            if demand.problems:
                return "; ".join(demand.problems)
            node = self._with_in_flight(self._index.node(name), taken)
            found = allocate(demand, name, node, self._selectors)
            return found.reason if isinstance(found, Refusal) else None

        return check

    def reserve(self, pod: Json, node: str) -> None:
        self._unplaced.discard(pod_key(pod))
        demand = pod_demand(self._with_made(pod), self._index, self._selectors)
        devices = self._with_in_flight(self._index.node(node), self._taken())
        found = allocate(demand, node, devices, self._selectors)
        if isinstance(found, Allocation):
            self._in_flight[pod_key(pod)] = (node, found)

    async def prebind(self, pod: Json, node: str) -> None:
        """Allocate and reserve each claim for the pod, as PreBind does."""
        _, allocation = self._in_flight.get(pod_key(pod), (node, Allocation({})))
        namespace, _ = pod_key(pod)
        for name, label in _claims(self._with_made(pod)):
            claim = await self._calls.get_claim(namespace, name)
            updated = copy.deepcopy(claim)
            status = updated.setdefault("status", {})
            if not status.get("allocation"):
                claim_label = f"{namespace}/{label}"
                picks = [
                    (request, device, allocation.shared.get((claim_label, request, device)))
                    for (owner, request), ids in allocation.devices.items()
                    if owner == claim_label
                    for device in ids
                ]
                status["allocation"] = _allocation(picks, node, f"{namespace}-{name}")
            entries = status.get("reservedFor") or []
            uid = (pod.get("metadata") or {}).get("uid")
            if not any(e.get("uid") == uid for e in entries):
                status["reservedFor"] = [*entries, _consumer(pod)]
            await self._calls.update_claim_status(namespace, name, updated)

    async def unreserve(self, pod: Json) -> None:
        """Take the pod out of its claims' `reservedFor`, as Unreserve does."""
        self._in_flight.pop(pod_key(pod), None)
        namespace, _ = pod_key(pod)
        uid = (pod.get("metadata") or {}).get("uid")
        for name, _label in _claims(self._with_made(pod)):
            claim = await self._calls.get_claim(namespace, name)
            entries = (claim.get("status") or {}).get("reservedFor") or []
            if any(e.get("uid") == uid for e in entries):
                claim["status"]["reservedFor"] = [e for e in entries if e.get("uid") != uid]
                await self._calls.update_claim_status(namespace, name, claim)

    async def _post_filter(self, pod: Json) -> None:
        """Deallocate the first of the pod's claims that is allocated and reserved for no other
        pod (dynamicresources.go, PostFilter, which picks one at random)."""
        namespace, _ = pod_key(pod)
        uid = (pod.get("metadata") or {}).get("uid")
        for name, _label in _claims(self._with_made(pod)):
            try:
                claim = await self._calls.get_claim(namespace, name)
            except NotFound:
                continue
            status = claim.get("status") or {}
            others = [e for e in status.get("reservedFor") or [] if e.get("uid") != uid]
            if status.get("allocation") and not others:
                unset = ("allocation", "reservedFor")
                claim["status"] = {k: v for k, v in status.items() if k not in unset}
                await self._calls.update_claim_status(namespace, name, claim)
                await self.refresh()
                return

    def done(self, pod: Json) -> None:
        self._in_flight.pop(pod_key(pod), None)
        self._made.pop(pod_key(pod), None)

    def _with_made(self, pod: Json) -> Json:
        made = self._made.get(pod_key(pod))
        if made is None or (pod.get("status") or {}).get("resourceClaimStatuses"):
            return pod
        return {**pod, "status": {**(pod.get("status") or {}), "resourceClaimStatuses": made}}

    def _taken(self) -> frozenset[DeviceId]:
        """The devices in-flight allocations hold whole (not those they share)."""
        return frozenset(
            d
            for _, a in self._in_flight.values()
            for (claim, request), ids in a.devices.items()
            for d in ids
            if (claim, request, d) not in a.shared
        )

    def _with_in_flight(
        self, node: NodeDevices | None, taken: frozenset[DeviceId]
    ) -> NodeDevices | None:
        """The node's devices with what in-flight allocations hold and consume added."""
        if node is None:
            return None
        consumed = dict(node.consumed)
        for _, a in self._in_flight.values():
            for (_, _, device), amounts in a.shared.items():
                consumed[device] = add(consumed.get(device, {}), amounts)
        if not taken and consumed == node.consumed:
            return node
        return replace(node, held=node.held | taken, consumed=consumed)


def _from_template(pod: Json, entry: Json, template: Json) -> Json:
    meta = pod.get("metadata") or {}
    owner = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "generateName": f"{meta.get('name')}-{entry.get('name')}-",
            "annotations": {"resource.kubernetes.io/pod-claim-name": entry.get("name")},
            "ownerReferences": [owner],
        },
        "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {}),
    }


def _claims(pod: Json) -> list[tuple[str, str]]:
    """(claim name, the label pod_demand gives its requests) for each claim of the pod."""
    generated = {
        s.get("name"): s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    found = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
        if name:
            found.append((str(name), str(name)))
    return found


def _allocation(
    picks: list[tuple[str, DeviceId, Amounts | None]], node: str, share_prefix: str
) -> Json:
    results = []
    for n, (request, d, consumed) in enumerate(picks):
        result: Json = {"request": request, "driver": d[0], "pool": d[1], "device": d[2]}
        if consumed is not None:  # a shared device: its share, and what it consumes
            result["shareID"] = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{share_prefix}-{n}"))
            result["consumedCapacity"] = {k: f"{v.normalize():f}" for k, v in consumed.items()}
        results.append(result)
    selector = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [selector]}}


def _consumer(pod: Json) -> Json:
    meta = pod.get("metadata") or {}
    return {"resource": "pods", "name": meta.get("name"), "uid": meta.get("uid")}


class HttpDraCalls:
    """DraCalls over kubernetes-asyncio's CustomObjectsApi (resource.k8s.io/v1)."""

    GROUP, VERSION = "resource.k8s.io", "v1"

    def __init__(self, custom: Any) -> None:
        self._custom = custom

    async def list(self, plural: str) -> list[Json]:
        """Every object of `plural`; none where the apiserver does not serve DRA (or, for
        DeviceTaintRules, no version of them: v1 from 1.37, v1beta2 1.36, v1alpha3 1.33)."""
        for version in RULE_VERSIONS if plural == RULES else (self.VERSION,):
            try:
                body = await call(
                    f"list {plural}",
                    self._custom.list_cluster_custom_object,
                    self.GROUP,
                    version,
                    plural,
                )
            except NotFound:
                continue
            return list(body.get("items") or [])
        return []

    async def get_claim(self, namespace: str, name: str) -> Json:
        found: Json = await self._custom.get_namespaced_custom_object(
            self.GROUP, self.VERSION, namespace, "resourceclaims", name
        )
        return found

    async def update_claim_status(self, namespace: str, name: str, claim: Json) -> Json:
        found: Json = await self._custom.replace_namespaced_custom_object_status(
            self.GROUP, self.VERSION, namespace, "resourceclaims", name, claim
        )
        return found

    async def create_claim(self, namespace: str, claim: Json) -> Json:
        found: Json = await self._custom.create_namespaced_custom_object(
            self.GROUP, self.VERSION, namespace, "resourceclaims", claim
        )
        return found


def both(
    first: Callable[[str], str | None], second: Callable[[str], str | None]
) -> Callable[[str], str | None]:
    def check(name: str) -> str | None:
        return first(name) or second(name)

    return check
