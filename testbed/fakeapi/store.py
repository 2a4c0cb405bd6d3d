"""The fake apiserver's state: objects by resource, namespace and name, one resourceVersion
counter bumped by every write, and the event log that lets a watch resume from a version.

Writes follow the apiserver's rules where a client can observe them: create refuses a taken name
and fills `generateName`, uid and creationTimestamp; update refuses a stale resourceVersion and
keeps the immutable metadata; the pods/binding subresource sets the node once. There is no
defaulting, validation, admission (a namespace need not exist), finalizers or graceful deletion.
`compact` forgets the log, as etcd compaction does, so that old versions answer 410 Expired.
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kube_rdma.core.objects import Json
from testbed.fakeapi.claims import claim_problem
from testbed.fakeapi.errors import (
    MODIFIED,
    NAMESPACE_MISMATCH,
    NO_RESOURCE,
    ApiError,
    conflict,
    integer,
)
from testbed.fakeapi.patches import MERGE_PATCH, apply_patch
from testbed.fakeapi.selectors import Selector

FIRST_VERSION: Final = 100
BOUND: Final[Json] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Success",
    "code": 201,
}
IMMUTABLE_METADATA: Final = ("name", "namespace", "uid", "creationTimestamp")
NAME_LETTERS: Final = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet


@dataclass(frozen=True)
class Resource:
    """One REST collection: the kind it holds, its scope and its group/version. The table of
    resources names each by a key, its URL plural unless `plural` says otherwise: two groups may
    serve one plural (`jobs` of batch and of Volcano), and the table keeps them apart by key."""

    kind: str
    namespaced: bool
    api_version: str = "v1"
    plural: str = ""
    """The plural in URLs, when the table's key is not it."""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


DRA_V1: Final = "resource.k8s.io/v1"
RESOURCES: Final[Mapping[str, Resource]] = {
    "namespaces": Resource("Namespace", namespaced=False),
    "nodes": Resource("Node", namespaced=False),
    "pods": Resource("Pod", namespaced=True),
    # What controllers coordinate through: records in ConfigMaps, leader election in Leases.
    "configmaps": Resource("ConfigMap", namespaced=True),
    "leases": Resource("Lease", namespaced=True, api_version="coordination.k8s.io/v1"),
    # What preemption reads and writes: budgets it must respect, events it records.
    "poddisruptionbudgets": Resource(
        "PodDisruptionBudget", namespaced=True, api_version="policy/v1"
    ),
    "events": Resource("Event", namespaced=True),
    # Dynamic Resource Allocation (resource.k8s.io/v1, Kubernetes 1.34): the devices nodes
    # publish, the claims that hold them (their `status` subresource carries the allocation
    # and `reservedFor`), and what claims are made from.
    "resourceslices": Resource("ResourceSlice", namespaced=False, api_version=DRA_V1),
    "resourceclaims": Resource("ResourceClaim", namespaced=True, api_version=DRA_V1),
    "resourceclaimtemplates": Resource(
        "ResourceClaimTemplate", namespaced=True, api_version=DRA_V1
    ),
    "deviceclasses": Resource("DeviceClass", namespaced=False, api_version=DRA_V1),
}

DEVICE_TAINT_RULE_VERSIONS: Final[Mapping[str, str]] = {
    "1.33": "v1alpha3",
    "1.34": "v1alpha3",
    "1.35": "v1alpha3",
    "1.36": "v1beta2",
    "1.37": "v1",
}
"""The newest resource.k8s.io version serving DeviceTaintRule per Kubernetes release (k8s.io/api
at release-1.33 ... release-1.36 and master: resource/v1alpha3/types.go from 1.33, v1beta2 from
1.36, v1 from 1.37, each `+k8s:prerelease-lifecycle-gen:introduced`). Off by default where it is
alpha or beta (the device-taint feature and the API version must be enabled), so the
default table leaves it out: install `device_taint_rules(release)` to serve it."""


def device_taint_rules(release: str) -> Resource:
    """DeviceTaintRule as Kubernetes `release` ("1.36") serves it at its newest version."""
    version = DEVICE_TAINT_RULE_VERSIONS[release]
    return Resource("DeviceTaintRule", namespaced=False, api_version=f"resource.k8s.io/{version}")


def event(kind: str, obj: Json) -> Json:
    """One line of a watch stream."""
    return {"type": kind, "object": obj}


@dataclass(frozen=True)
class Change:
    """One write, kept so that a watch can start from an older resourceVersion."""

    version: int
    plural: str
    type: str
    obj: Json
    old: Json | None = None

    def event_for(self, selector: Selector) -> Json | None:
        """The event a watch with `selector` sees, following the cacher: an object that stops
        matching is DELETED (its old state at the new version), one that starts matching ADDED."""
        if self.plural != selector.plural:
            return None
        now = selector.matches(self.obj)
        before = self.old is not None and selector.matches(self.old)
        if self.type == "MODIFIED" and before and not now:
            old = copy.deepcopy(self.old or {})
            old["metadata"]["resourceVersion"] = str(self.version)
            return event("DELETED", old)
        if self.type == "MODIFIED" and now and not before:
            return event("ADDED", self.obj)
        return event(self.type, self.obj) if now else None


class Store:
    """Objects and their history; `on_change` hears of every write (the open watches)."""

    def __init__(
        self,
        resources: Mapping[str, Resource],
        *,
        clock: Callable[[], datetime],
        seed: int,
        on_change: Callable[[Change], None],
    ) -> None:
        self.resources = dict(resources)
        self.version = FIRST_VERSION
        self._clock = clock
        self._random = random.Random(seed)
        self._on_change = on_change
        self._listed: tuple[tuple[Selector, int], list[Json]] | None = None
        self._objects: dict[tuple[str, str, str], Json] = {}
        self._history: list[Change] = []
        self._compacted = 0

    # --- writes --------------------------------------------------------------------------------

    def create(self, plural: str, obj: Json, namespace: str | None = None) -> Json:
        body = self._admitted(plural, obj, namespace)
        body["metadata"]["uid"] = self._uid()
        body["metadata"]["creationTimestamp"] = self.timestamp()
        return self._commit(plural, "ADDED", body)

    def restore(self, plural: str, obj: Json) -> Json:
        """Create `obj` keeping its uid and creationTimestamp, as restoring a backup does."""
        body = self._admitted(plural, obj, None)
        body["metadata"].setdefault("uid", self._uid())
        body["metadata"].setdefault("creationTimestamp", self.timestamp())
        return self._commit(plural, "ADDED", body)

    def restore_owned(self, plural: str, obj: Json) -> None:
        """`restore`, for an object handed over (the caller keeps no reference to it, as when
        loading a snapshot): stored and recorded as it is, without `restore`'s three copies,
        which made loading 200,000 served pods take a quarter of an hour. Stored objects are
        never changed in place (writes store new copies), so the history may share it."""
        body = self._admitted(plural, obj, None, owned=True)
        body["metadata"].setdefault("uid", self._uid())
        body["metadata"].setdefault("creationTimestamp", self.timestamp())
        self._commit(plural, "ADDED", body, owned=True)

    def update(self, plural: str, obj: Json, namespace: str | None = None) -> Json:
        """Replace an object (PUT): a resourceVersion in `obj` must be the stored one."""
        meta = obj.get("metadata") or {}
        name = str(meta.get("name"))
        current = self._stored(plural, name, namespace or meta.get("namespace"))
        body = copy.deepcopy(obj)
        body_meta = body.setdefault("metadata", {})
        stored_version = current["metadata"]["resourceVersion"]
        if body_meta.get("resourceVersion") not in (None, "", stored_version):
            raise conflict(self._qualified(plural), name, MODIFIED, plural)
        for immutable in IMMUTABLE_METADATA:
            if immutable in current["metadata"]:
                body_meta[immutable] = current["metadata"][immutable]
        return self._commit(plural, "MODIFIED", body, current)

    def patch(
        self,
        plural: str,
        name: str,
        patch: Any,
        content_type: str = MERGE_PATCH,
        namespace: str | None = None,
    ) -> Json:
        current = self._stored(plural, name, namespace)
        patched = apply_patch(current, patch, content_type)
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise ApiError(422, "fake apiserver: the patch removed the object's metadata")
        check_name(patched, name)
        return self.update(plural, patched, namespace)

    def delete(
        self,
        plural: str,
        name: str,
        namespace: str | None = None,
        preconditions: Json | None = None,
    ) -> Json:
        """Delete; 409 when DeleteOptions' preconditions name another uid or resourceVersion."""
        current = self._stored(plural, name, namespace)
        for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            wanted, stored = (preconditions or {}).get(field), current["metadata"][field]
            if wanted and wanted != stored:
                why = f"Precondition failed: {label} in precondition: {wanted}, "
                raise conflict(
                    self._qualified(plural), name, why + f"{label} in object meta: {stored}", plural
                )
        return self._commit(plural, "DELETED", copy.deepcopy(current))

    def bind(self, namespace: str, binding: Json) -> Json:
        """Apply a v1 Binding as the pods/binding subresource does; the Success Status."""
        name = str((binding.get("metadata") or {}).get("name"))
        pod = self._stored("pods", name, namespace)
        target = str((binding.get("target") or {}).get("name") or "")
        uid = (binding.get("metadata") or {}).get("uid")
        if not target:
            raise ApiError(422, f'Binding "{name}" is invalid: target.name: Required value')
        if uid and uid != pod["metadata"]["uid"]:
            why = f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            raise ApiError(409, why + pod["metadata"]["uid"], name=name, plural="pods")
        if assigned := pod.get("spec", {}).get("nodeName"):
            why = f'pod {name} is already assigned to node "{assigned}"'
            raise conflict("pods/binding", name, why, "pods")
        self._commit("pods", "MODIFIED", self._bound(pod, binding, target), pod)
        return copy.deepcopy(BOUND)

    def compact(self) -> None:
        """Forget the event history: a watch from an older resourceVersion gets 410 Expired."""
        self._history.clear()
        self._compacted = self.version

    # --- reads ---------------------------------------------------------------------------------

    def resource(self, plural: str) -> Resource:
        if plural not in self.resources:
            raise ApiError(404, NO_RESOURCE)
        return self.resources[plural]

    def key_of(self, api_version: str, plural: str) -> str | None:
        """The table key of the resource served at `api_version`/`plural`."""
        for key, resource in self.resources.items():
            if resource.api_version == api_version and (resource.plural or key) == plural:
                return key
        return None

    def get(self, plural: str, name: str, namespace: str | None = None) -> Json:
        return copy.deepcopy(self._stored(plural, name, namespace))

    def count(self, plural: str) -> int:
        """How many objects of `plural` are stored (nothing copied)."""
        return sum(1 for key in self._objects if key[0] == plural)

    def select(self, selector: Selector) -> list[Json]:
        """Copies of the matching objects, sorted as etcd keys are."""
        return copy.deepcopy(self._matching(selector))

    def list_body(self, selector: Selector) -> Json:
        """The `<Kind>List` a GET on the collection answers."""
        resource = self.resource(selector.plural)
        return {
            "kind": f"{resource.kind}List",
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": str(self.version)},
            "items": self._listing(selector),  # encoded at once, so not copied
        }

    def _listing(self, selector: Selector) -> list[Json]:
        """The matching objects, kept while nothing changes: the pages of one list read them."""
        if self._listed is None or self._listed[0] != (selector, self.version):
            self._listed = ((selector, self.version), self._matching(selector))
        return self._listed[1]

    def backlog(self, selector: Selector, since: str) -> list[Json]:
        """The events a new watch starts with, or a single 410 ERROR when history is gone.

        From "" or "0" that is, like the real apiserver, a synthetic ADDED per existing object;
        a version newer than the latest is not held back."""
        if since in ("", "0"):
            return [event("ADDED", o) for o in self.select(selector)]
        version = integer(since, "resourceVersion")
        if version < self._compacted:
            expired = ApiError(410, f"too old resource version: {version} ({self._compacted})")
            return [event("ERROR", expired.status())]
        events = (c.event_for(selector) for c in self._history if c.version > version)
        return [e for e in events if e is not None]

    def bookmark(self, plural: str) -> Json:
        """A BOOKMARK event at the latest resourceVersion."""
        resource = self.resource(plural)
        obj = {"kind": resource.kind, "apiVersion": resource.api_version}
        return event("BOOKMARK", obj | {"metadata": {"resourceVersion": str(self.version)}})

    def timestamp(self) -> str:
        return self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")

    # --- internals -----------------------------------------------------------------------------

    def _admitted(
        self, plural: str, obj: Json, namespace: str | None, *, owned: bool = False
    ) -> Json:
        """A copy of `obj` (`obj` itself when `owned`) with its namespace and name settled,
        refused when the name is taken."""
        resource = self.resource(plural)
        body = obj if owned else copy.deepcopy(obj)
        meta = body.setdefault("metadata", {})
        if resource.namespaced:
            namespace = namespace or meta.get("namespace") or "default"
            if meta.setdefault("namespace", namespace) != namespace:
                raise ApiError(400, NAMESPACE_MISMATCH)
        else:
            meta.pop("namespace", None)
        meta["name"] = meta.get("name") or self._generate_name(meta.get("generateName"))
        if self._key(plural, meta.get("namespace"), meta["name"]) in self._objects:
            message = f'{self._qualified(plural)} "{meta["name"]}" already exists'
            raise ApiError(409, message, "AlreadyExists", name=meta["name"], plural=plural)
        return body

    def _matching(self, selector: Selector) -> list[Json]:
        keys = sorted(k for k in self._objects if k[0] == selector.plural)
        return [o for o in map(self._objects.__getitem__, keys) if selector.matches(o)]

    def _key(self, plural: str, namespace: str | None, name: str) -> tuple[str, str, str]:
        scope = namespace or "" if self.resource(plural).namespaced else ""
        return plural, scope, name

    def _qualified(self, plural: str) -> str:
        resource = self.resource(plural)
        name = resource.plural or plural
        return f"{name}.{resource.group}" if resource.group else name

    def _stored(self, plural: str, name: str, namespace: str | None) -> Json:
        namespace = namespace or ("default" if self.resource(plural).namespaced else None)
        found = self._objects.get(self._key(plural, namespace, name))
        if found is None:
            message = f'{self._qualified(plural)} "{name}" not found'
            raise ApiError(404, message, name=name, plural=plural)
        return found

    def _uid(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    def _generate_name(self, prefix: str | None) -> str:
        if not prefix:
            raise ApiError(422, "metadata.name: Required value: name or generateName is required")
        for _ in range(100):
            name = prefix + "".join(self._random.choices(NAME_LETTERS, k=5))
            if not any(key[2] == name for key in self._objects):
                return name
        raise ApiError(409, f"fake apiserver: no free name for generateName {prefix!r}")

    def _commit(
        self, plural: str, kind: str, obj: Json, old: Json | None = None, *, owned: bool = False
    ) -> Json:
        """Store a write under a new resourceVersion and tell the watches that see it; `owned`:
        the history shares `obj` and it is returned as it is, not copied."""
        resource = self.resource(plural)
        if plural == "resourceclaims" and kind != "DELETED":
            problem = claim_problem(obj)
            if problem is not None:
                raise ApiError(422, problem)
        self.version += 1
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        obj["metadata"]["resourceVersion"] = str(self.version)
        key = self._key(plural, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if kind == "DELETED":
            del self._objects[key]
        else:
            self._objects[key] = obj
        change = Change(self.version, plural, kind, obj if owned else copy.deepcopy(obj), old)
        self._history.append(change)
        self._on_change(change)
        return obj if owned else copy.deepcopy(obj)

    def _bound(self, pod: Json, binding: Json, node: str) -> Json:
        """The pod on `node` with the binding's annotations and PodScheduled=True, as
        pkg/registry/core/pod/storage's setPodHostAndAnnotations leaves it."""
        bound = copy.deepcopy(pod)
        bound.setdefault("spec", {})["nodeName"] = node
        if annotations := (binding.get("metadata") or {}).get("annotations"):
            bound["metadata"].setdefault("annotations", {}).update(annotations)
        conditions = bound.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
        scheduled = {"type": "PodScheduled", "status": "True"}
        conditions.append(scheduled | {"lastTransitionTime": self.timestamp()})
        return bound


def check_name(obj: Json, name: str, *, missing_ok: bool = False) -> None:
    """400 when the body names another object than the URL does."""
    found = (obj.get("metadata") or {}).get("name", name if missing_ok else None)
    if found != name:
        message = f"the name of the object ({found}) does not match the name on the URL ({name})"
        raise ApiError(400, message)
