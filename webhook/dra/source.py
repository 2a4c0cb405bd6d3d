"""Reading ResourceClaimTemplates, ResourceClaims and DeviceClasses: from the apiserver, or from
a file standing in for it.

The webhook reads only what one review needs, by name, with `get` (its RBAC allows no more).
resource.k8s.io is served as v1 from Kubernetes 1.34, v1beta2 from 1.33 and v1beta1 from 1.32;
API discovery (GET /apis/resource.k8s.io/VERSION) finds the newest one this apiserver serves;
a version found served is remembered for the process, one not served is asked about again (so
enabling DRA needs no restart). The objects of the three versions differ only where
`webhook.dra.kinds` reads both forms.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Protocol

from kube_rdma.core.documents import DocumentError, read_documents
from kube_rdma.core.objects import Json
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import ApiError, NotFound

GROUP: Final = "resource.k8s.io"
VERSIONS: Final = ("v1", "v1beta2", "v1beta1")
"""Newest first: the first one discovery finds served is read."""
TEMPLATES: Final = "resourceclaimtemplates"
CLAIMS: Final = "resourceclaims"
CLASSES: Final = "deviceclasses"
_KINDS: Final = {
    "ResourceClaimTemplate": TEMPLATES,
    "ResourceClaim": CLAIMS,
    "DeviceClass": CLASSES,
}
# A review must be answered well inside the webhook's timeout, with a few reads in it.
LOOKUP_TIMEOUT_SECONDS: Final = 2.0


class DraUnavailable(Exception):
    """The apiserver could not say whether an object exists; the message says which."""


class DraSource(Protocol):
    async def get(self, plural: str, namespace: str | None, name: str) -> Json | None:
        """The object, or None when it does not exist (or resource.k8s.io is not served);
        raises DraUnavailable when that cannot be told."""
        ...


class StaticDra:
    """DRA objects from a fixed list, for local runs, demos and tests."""

    def __init__(self, objects: Iterable[Json] = ()) -> None:
        self._objects: dict[tuple[str, str | None, str], Json] = {}
        for obj in objects:
            plural = _KINDS.get(str(obj.get("kind")))
            if plural is None:
                continue
            meta = obj.get("metadata") or {}
            namespace = None if plural == CLASSES else meta.get("namespace")
            self._objects[(plural, namespace, str(meta.get("name")))] = obj

    @classmethod
    def from_file(cls, path: Path) -> StaticDra:
        """Read the objects from YAML or JSON: a list, a `kind: List`, or documents."""
        try:
            documents = read_documents(path)
        except DocumentError as e:
            raise DocumentError(f"DRA objects file {path}: {e}") from None
        objects: list[Json] = []
        for doc in documents:
            if isinstance(doc, list):
                objects += doc
            elif isinstance(doc, dict) and "items" in doc:
                objects += doc["items"] or []
            elif isinstance(doc, dict):
                objects.append(doc)
        return cls(o for o in objects if isinstance(o, dict))

    async def get(self, plural: str, namespace: str | None, name: str) -> Json | None:
        return self._objects.get((plural, namespace, name))


class LiveDra:
    """DRA objects read from the apiserver, through kubernetes-asyncio's CustomObjectsApi."""

    def __init__(self, custom_api: Any) -> None:
        self._api = custom_api
        self._versions: dict[str, str] = {}
        self._served_by: dict[str, list[str]] = {}

    async def get(self, plural: str, namespace: str | None, name: str) -> Json | None:
        version = await self._version(plural)
        if version is None:
            return None
        where = f"{GROUP}/{version} {plural} {namespace + '/' if namespace else ''}{name}"
        args: tuple[str, ...] = (GROUP, version, plural, name)
        method = self._api.get_cluster_custom_object
        if namespace is not None:
            args = (GROUP, version, namespace, plural, name)
            method = self._api.get_namespaced_custom_object
        try:
            return await call(f"get {where}", method, *args, request_timeout=LOOKUP_TIMEOUT_SECONDS)
        except NotFound:
            return None
        except ApiError as e:
            raise DraUnavailable(str(e)) from e

    async def _version(self, plural: str) -> str | None:
        """The newest version of resource.k8s.io serving `plural`, None when none does (not
        remembered then, so enabling DRA later needs no restart)."""
        if plural in self._versions:
            return self._versions[plural]
        for version in VERSIONS:
            if plural in await self._served(version):
                self._versions[plural] = version
                return version
        return None

    async def _served(self, version: str) -> list[str]:
        """The resources `version` of resource.k8s.io serves (GET /apis/GROUP/VERSION, the
        APIResourceList kubectl reads too); none when the apiserver does not serve it. A version
        found served is remembered; one not served is asked about again next time."""
        if version in self._served_by:
            return self._served_by[version]
        try:
            body = await call(
                f"discover {GROUP}/{version}",
                self._api.get_api_resources,
                GROUP,
                version,
                request_timeout=LOOKUP_TIMEOUT_SECONDS,
            )
        except NotFound:
            return []
        except ApiError as e:
            raise DraUnavailable(str(e)) from e
        served = [str(r.get("name")) for r in body.get("resources") or [] if isinstance(r, dict)]
        self._served_by[version] = served
        return served


class ReviewReads:
    """One review's reads: each object asked for once, however often the review needs it."""

    def __init__(self, source: DraSource) -> None:
        self._source = source
        self._read: dict[tuple[str, str | None, str], Json | None] = {}

    async def get(self, plural: str, namespace: str | None, name: str) -> Json | None:
        key = (plural, namespace, name)
        if key not in self._read:
            self._read[key] = await self._source.get(plural, namespace, name)
        return self._read[key]
