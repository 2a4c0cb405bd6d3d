"""The resource.k8s.io part of a simulation's apiserver: ResourceSlices, DeviceClasses,
ResourceClaimTemplates and ResourceClaims (with `status.allocation` and `status.reservedFor`),
served to the emulated kube-scheduler's DynamicResources plugin (kubesim/scheduler/
dynamicresources.py's `DraCalls`) and followed by the extender's model.

Two controllers' parts are played where a pod is deleted, as the real ones do it then:
- the garbage collector deletes the claims the pod owns (a claim made from a template has the
  pod as its controlling owner; kubernetes pkg/controller/garbagecollector), which frees their
  devices;
- the ResourceClaim controller takes the pod out of the `reservedFor` of the claims it shared
  with others, and deallocates a claim it took the last pod out of (kubernetes pkg/controller/
  resourceclaim/controller.go, syncClaim: only on that transition; a claim whose `reservedFor`
  kube-scheduler's Unreserve emptied stays allocated, until kube-scheduler's DynamicResources
  PostFilter deallocates it, kubesim/scheduler/dynamicresources.py).

Every claim write is also checked: a device allocated to a claim while another claim holds it is
counted in `double_allocations`, the claims named. The checks read the store, not the emulator's
intentions.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Mapping

from extender.cluster import dra_objects
from kube_rdma.core.dra import shapes
from kube_rdma.core.dra.shapes import DeviceId
from kube_rdma.core.objects import Json
from kube_rdma.kube.errors import Conflict, NotFound

ObjectKey = tuple[str, str]
DeviceKey = DeviceId
"""(driver, pool, device), as an allocation result names a device."""
ClaimListener = Callable[[str, Json], None]
"""(watch event type, claim): ADDED, MODIFIED or DELETED."""
CLUSTER_SCOPED = frozenset({"resourceslices", "deviceclasses"})
SUFFIX = "bcdfghjklmnpqrstvwxz2456789"
"""The letters the apiserver's generateName suffixes are made of (k8s.io/apimachinery
pkg/util/rand, String)."""


class DraStore:
    def __init__(self, objects: Iterable[Json]) -> None:
        self.objects: dict[str, dict[ObjectKey, Json]] = {
            p: {} for p in dra_objects.PLURALS.values()
        }
        for obj in objects:
            plural = dra_objects.PLURALS.get(str(obj.get("kind")))
            if plural is not None:
                self.objects[plural][_key(plural, obj)] = obj
        self._listeners: list[ClaimListener] = []
        self._names = itertools.count(1)
        self._holders: dict[DeviceKey, ObjectKey] = {}
        self.double_allocations: list[tuple[DeviceKey, ObjectKey, ObjectKey]] = []
        """(device, the claim holding it, the claim also given it)"""
        for key, claim in self.claims().items():
            self._hold(key, claim)

    def on_claim(self, listener: ClaimListener) -> None:
        self._listeners.append(listener)

    def claims(self) -> Mapping[ObjectKey, Json]:
        return self.objects["resourceclaims"]

    def add(self, obj: Json) -> None:
        """A DeviceClass or ResourceClaimTemplate the simulation brings (not a claim)."""
        plural = dra_objects.PLURALS[str(obj["kind"])]
        self.objects[plural][_key(plural, obj)] = obj

    # kubesim/scheduler/dynamicresources.py's DraCalls

    async def list(self, plural: str) -> list[Json]:
        return list(self.objects[plural].values())

    async def get_claim(self, namespace: str, name: str) -> Json:
        claim = self.claims().get((namespace, name))
        if claim is None:
            message = f'resourceclaims.resource.k8s.io "{name}" not found'
            raise NotFound(f"get ResourceClaim {namespace}/{name}", 404, "NotFound", message)
        return copy.deepcopy(claim)

    async def update_claim_status(self, namespace: str, name: str, claim: Json) -> Json:
        return self.replace_status(namespace, name, claim.get("status") or {})

    async def create_claim(self, namespace: str, claim: Json) -> Json:
        meta = dict(claim.get("metadata") or {})
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName') or ''}{self._suffix()}"
        meta |= {"namespace": namespace, "uid": f"sim-claim-{next(self._names)}"}
        key = (namespace, str(meta["name"]))
        if key in self.claims():
            raise Conflict(f"create ResourceClaim {key[0]}/{key[1]}", 409, "AlreadyExists", "")
        created = {**claim, "kind": "ResourceClaim", "metadata": meta}
        self.objects["resourceclaims"][key] = created
        self._hold(key, created)
        self._tell("ADDED", created)
        return copy.deepcopy(created)

    # The claims' status, and the controllers' part when a pod goes

    def replace_status(self, namespace: str, name: str, status: Json) -> Json:
        key = (namespace, name)
        claim = self.claims().get(key)
        if claim is None:
            operation = f"update ResourceClaim {namespace}/{name} status"
            message = f'resourceclaims.resource.k8s.io "{name}" not found'
            raise NotFound(operation, 404, "NotFound", message)
        self._release(key, claim)
        updated = {**claim, "status": copy.deepcopy(status)}
        self.objects["resourceclaims"][key] = updated
        self._hold(key, updated)
        self._tell("MODIFIED", updated)
        return copy.deepcopy(updated)

    def pod_deleted(self, pod: Json) -> None:
        meta = pod.get("metadata") or {}
        namespace, uid = str(meta.get("namespace") or "default"), meta.get("uid")
        for key, claim in list(self.claims().items()):
            if key[0] != namespace:
                continue
            if _owned_by(claim, meta):
                self._delete(key, claim)
                continue
            entries = (claim.get("status") or {}).get("reservedFor") or []
            left = [e for e in entries if e.get("uid") != uid]
            if len(left) < len(entries):
                status = {**(claim.get("status") or {}), "reservedFor": left}
                if not left:
                    status.pop("allocation", None)
                self.replace_status(*key, {k: v for k, v in status.items() if v})

    def _delete(self, key: ObjectKey, claim: Json) -> None:
        del self.objects["resourceclaims"][key]
        self._release(key, claim)
        self._tell("DELETED", claim)

    # Who holds which device

    def _hold(self, key: ObjectKey, claim: Json) -> None:
        for device in allocated_devices(claim):
            holder = self._holders.get(device)
            if holder is not None and holder != key:
                self.double_allocations.append((device, holder, key))
            else:
                self._holders[device] = key

    def _release(self, key: ObjectKey, claim: Json) -> None:
        for device in allocated_devices(claim):
            if self._holders.get(device) == key:
                del self._holders[device]

    def _tell(self, event: str, claim: Json) -> None:
        for listener in self._listeners:
            listener(event, claim)

    def _suffix(self) -> str:
        number, letters = next(self._names), []
        for _ in range(5):
            number, digit = divmod(number, len(SUFFIX))
            letters.append(SUFFIX[digit])
        return "".join(letters)


def allocated_devices(claim: Json) -> list[DeviceKey]:
    """The devices a claim's allocation names; an `adminAccess` result takes none."""
    return [device for device, admin in shapes.allocated_devices(claim) if not admin]


def _owned_by(claim: Json, pod_meta: Json) -> bool:
    """The pod is the claim's controlling owner: by uid, or by name where the owner reference
    (as a snapshot may hold it) carries none."""
    for owner in (claim.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("kind") != "Pod" or not owner.get("controller"):
            continue
        if owner.get("uid"):
            if owner["uid"] == pod_meta.get("uid"):
                return True
        elif owner.get("name") == pod_meta.get("name"):
            return True
    return False


def _key(plural: str, obj: Json) -> ObjectKey:
    meta = obj.get("metadata") or {}
    namespace = "" if plural in CLUSTER_SCOPED else str(meta.get("namespace") or "default")
    return namespace, str(meta.get("name"))
