"""The labels of Namespaces, which an AdmissionReview does not carry.

The webhook needs two of them: `kube-rdma.io/injection` (namespace opt-in) and
`pod-security.kubernetes.io/enforce`. Two sources sit behind one Protocol: a live cache fed
by list + watch (with a direct GET for a namespace created a moment ago and not yet seen), and
a static stand-in read from a file so the webhook runs without a cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from kube_rdma.core.documents import DocumentError, read_documents
from kube_rdma.kube.client import call
from kube_rdma.kube.errors import NotFound
from kube_rdma.kube.reflector import Reflector

log = logging.getLogger(__name__)

Labels = Mapping[str, str]
# A review must be answered well inside the webhook's 5-second timeout.
LOOKUP_TIMEOUT_SECONDS = 2.0


class NamespaceSource(Protocol):
    async def labels(self, name: str) -> Labels:
        """The namespace's labels; empty when it is unknown."""
        ...

    def ready(self) -> bool: ...


class StaticNamespaces:
    """Namespace labels from a fixed map, for local runs, demos and tests."""

    def __init__(self, labels: Mapping[str, Labels] | None = None) -> None:
        self._labels = dict(labels or {})

    @classmethod
    def from_file(cls, path: Path) -> StaticNamespaces:
        """Read Namespace objects from YAML or JSON: a list, a `kind: List`, or documents."""
        objects: list[Any] = []
        try:
            documents = read_documents(path)
        except DocumentError as e:
            raise DocumentError(f"namespaces file {path}: {e}") from None
        for doc in documents:
            if isinstance(doc, list):
                objects.extend(doc)
            elif isinstance(doc, dict) and "items" in doc:
                objects.extend(doc["items"] or [])
            elif doc is not None:
                objects.append(doc)
        labels = {}
        for obj in objects:
            if not isinstance(obj, dict) or obj.get("kind", "Namespace") != "Namespace":
                continue
            meta = obj.get("metadata") or {}
            labels[str(meta.get("name"))] = dict(meta.get("labels") or {})
        return cls(labels)

    async def labels(self, name: str) -> Labels:
        return self._labels.get(name, {})

    def ready(self) -> bool:
        return True


class LiveNamespaces:
    """Namespace labels cached from the cluster through list + watch."""

    def __init__(self, core_api: Any) -> None:
        self._api = core_api
        self._labels: dict[str, Labels] = {}
        self.reflector = Reflector(
            core_api.list_namespace, self._replace, self._event, "namespaces"
        )

    def _replace(self, items: list[dict[str, Any]]) -> None:
        self._labels = {_name(o): _labels(o) for o in items}

    def _event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "DELETED":
            self._labels.pop(_name(obj), None)
        else:
            self._labels[_name(obj)] = _labels(obj)

    async def labels(self, name: str) -> Labels:
        cached = self._labels.get(name)
        if cached is not None:
            return cached
        try:
            obj = await call(
                f"read Namespace {name}",
                self._api.read_namespace,
                name,
                request_timeout=LOOKUP_TIMEOUT_SECONDS,
            )
        except NotFound:
            return {}
        labels = _labels(obj)
        self._labels.setdefault(name, labels)
        return labels

    def ready(self) -> bool:
        return self.reflector.synced.is_set()


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _labels(obj: dict[str, Any]) -> Labels:
    return dict((obj.get("metadata") or {}).get("labels") or {})
