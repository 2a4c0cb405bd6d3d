"""A cluster snapshot file read as objects for the fake apiserver to serve.

The format is the one `kube-rdma extender --cluster-snapshot` reads (and `testbed.clustergen`
writes): what `kubectl get nodes,pods -A -o yaml` prints (a `kind: List`), a bare list, or YAML
documents, `.json` files being read as JSON so that a broken one is reported in JSON terms.
Objects of kinds the server does not serve are set aside, not refused, so that a wider `kubectl
get` output still loads; anything malformed is refused with the file and the object named.
A real cluster also has the Namespaces its pods live in and the four every cluster starts
with: `implied_namespaces` gives those the snapshot lacks, labelled
`kubernetes.io/metadata.name` as the apiserver labels every Namespace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kube_rdma.core.documents import DocumentError, read_documents
from kube_rdma.core.objects import Json
from testbed.fakeapi.store import Resource

BUILTIN_NAMESPACES: Final = frozenset({"default", "kube-node-lease", "kube-public", "kube-system"})
NAME_LABEL: Final = "kubernetes.io/metadata.name"


class SnapshotError(Exception):
    """The snapshot cannot be served; the message names the file and what is wrong."""


@dataclass
class Snapshot:
    """The objects to serve as (plural, object), in file order, and the kinds set aside."""

    objects: list[tuple[str, Json]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)


def read_snapshot(path: Path, resources: Mapping[str, Resource]) -> Snapshot:
    """The objects of `path` that `resources` serve, in file order."""
    try:
        return sort_objects(_flatten(_documents(path)), resources)
    except SnapshotError as e:
        raise SnapshotError(f"{path}: {e}") from None


def sort_objects(objects: Iterator[Any], resources: Mapping[str, Resource]) -> Snapshot:
    """Each object checked and filed under the plural serving its kind, or set aside."""
    plurals = {(r.api_version, r.kind): plural for plural, r in resources.items()}
    snapshot = Snapshot()
    for number, obj in enumerate(objects, 1):
        kind = _checked(obj, number)
        plural = plurals.get((str(obj.get("apiVersion", "v1")), kind))
        if plural is None:
            snapshot.skipped[kind] = snapshot.skipped.get(kind, 0) + 1
        else:
            snapshot.objects.append((plural, obj))
    return snapshot


def implied_namespaces(objects: list[tuple[str, Json]]) -> list[Json]:
    """Namespace objects for the built-in namespaces and those `objects` live in, where missing."""
    present = {obj["metadata"]["name"] for plural, obj in objects if plural == "namespaces"}
    used = {obj["metadata"].get("namespace") for _, obj in objects} - {None, ""}
    missing = sorted((BUILTIN_NAMESPACES | used) - present)
    return [{"metadata": {"name": name, "labels": {NAME_LABEL: name}}} for name in missing]


def _documents(path: Path) -> list[Any]:
    """The snapshot file's documents, read as the extender reads them."""
    try:
        return read_documents(path)
    except DocumentError as e:
        raise SnapshotError(str(e)) from None


def _flatten(documents: list[Any]) -> Iterator[Any]:
    """Every object of the documents, lists (bare or `kind: List`) opened up."""
    for number, document in enumerate(documents, 1):
        if document is None:
            continue
        if isinstance(document, list):
            yield from document
        elif isinstance(document, dict) and str(document.get("kind", "")).endswith("List"):
            items = document.get("items") or []
            if not isinstance(items, list):
                raise SnapshotError(f"document {number}: {document['kind']}.items is not a list")
            yield from items
        elif isinstance(document, dict):
            yield document
        else:
            raise SnapshotError(f"document {number} is {_shown(document)}, not an object or a list")


def _checked(obj: Any, number: int) -> str:
    """The object's kind, once it is an object with a kind and a metadata.name."""
    if not isinstance(obj, dict):
        raise SnapshotError(f"object {number} is {_shown(obj)}, not an object")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise SnapshotError(f"object {number} has no kind")
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise SnapshotError(f"object {number} ({kind}) has no metadata.name")
    if not isinstance(meta.get("namespace", ""), str):
        raise SnapshotError(f"object {number} ({kind}): metadata.namespace is not a string")
    return kind


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
