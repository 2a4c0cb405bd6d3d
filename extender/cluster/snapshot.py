"""The static cluster source: Nodes and Pods read once from a snapshot file, with the PodGroups
and workload objects (batch Jobs, PyTorchJobs, MPIJobs, JobSets, Volcano Jobs) that size gangs,
and the DRA objects (ResourceSlices, ResourceClaims, DeviceClasses, ResourceClaimTemplates) of
clusters whose devices are published that way.

It lets the extender run without a cluster, for the demo, the simulator and tests: the same
filters and scores see a model built from a file, and `/bind` changes that model in memory as
the apiserver would change the pod. The file is what `kubectl get nodes,pods -A -o yaml`
writes (a `kind: List`), a bare list, or YAML documents; `.json` files are read as JSON so
that a broken one is reported in JSON terms. A snapshot that is wrong stops the extender with
a message naming the file and the object, rather than leaving nodes silently out. The model
keeps of each object only what the extender reads (cluster/trim.py), as the live source does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from extender.cluster import dra_objects
from extender.cluster.claims import claim_names, reserved
from extender.cluster.model import Cluster
from extender.cluster.owners import WORKLOADS, Owners, WorkloadResource, resource_of
from extender.cluster.pods import as_bound, pod_key
from extender.cluster.source import BindError
from extender.cluster.trim import trim_node, trim_pod, trim_workload
from kube_rdma.core.documents import DocumentError, read_documents
from kube_rdma.core.objects import Json
from kube_rdma.core.podshape import pod_problem

KINDS = frozenset(
    {"Node", "Pod", "PodGroup", "Workload", *(r.kind for r in WORKLOADS), *dra_objects.KINDS}
)
# Parts of an object the model reads as maps; anything else there is a broken snapshot.
MAPS = ("metadata", "spec", "status", "metadata.labels", "metadata.annotations")


class SnapshotError(Exception):
    """The snapshot file cannot be used; the message names the file and what is wrong."""


class SnapshotSource:
    """A cluster model that only `bind` changes."""

    def __init__(self, objects: list[Json] | None = None, cluster: Cluster | None = None) -> None:
        """`cluster`: an empty model to fill (one with the admin's DRA settings)."""
        self.cluster = cluster or Cluster()
        self.owners = Owners()
        objects = objects or []
        self.cluster.replace_nodes(trim_node(o) for o in objects if o.get("kind") == "Node")
        self.cluster.replace_pods(trim_pod(o) for o in objects if o.get("kind") == "Pod")
        for kind in sorted(dra_objects.KINDS):
            dra_objects.replace(self.cluster, kind, [o for o in objects if o.get("kind") == kind])
        # PodGroups of every API group; scheduling.k8s.io Workloads too (Kubernetes' own gangs)
        kinds = ("PodGroup", "CompositePodGroup", "Workload")
        for podgroup in (o for o in objects if o.get("kind") in kinds):
            self.cluster.upsert_podgroup(podgroup)
        # A snapshot holds every workload there is: an owner it lacks does not exist.
        for resource in WORKLOADS:
            owned = [trim_workload(o) for o in objects if _resource(o) == resource]
            self.owners.replace(resource, owned)

    @classmethod
    def from_file(cls, path: Path, cluster: Cluster | None = None) -> SnapshotSource:
        """Read Nodes, Pods, PodGroups, workloads and DRA objects from `path`; other kinds are
        skipped."""
        try:
            return cls(_objects(read_documents(path)), cluster)
        except (SnapshotError, DocumentError) as e:
            raise SnapshotError(f"{path}: {e}") from None

    def ready(self) -> bool:
        return True

    async def run(self) -> None:
        return None

    async def read_pod(self, namespace: str, name: str) -> Json | None:
        """The model's pod: a snapshot holds every pod there is."""
        return self.cluster.pod(namespace, name)

    async def reserve_claims(self, pod: Json, node: str) -> None:
        """As the live source, on the model's claims."""
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        names, unknown = claim_names(pod)
        if unknown:
            raise BindError(f"pod {namespace}: claims {', '.join(unknown)} are not created yet")
        for name in names:
            claim = self.cluster.dra.claims.get((namespace, name))
            if claim is None:
                raise BindError(f"ResourceClaim {namespace}/{name} does not exist")
            updated = reserved(claim, pod, node)
            if isinstance(updated, str):
                raise BindError(updated)
            self.cluster.dra_changed(self.cluster.dra.upsert_claim(updated))

    async def bind(
        self, namespace: str, name: str, uid: str, node: str, annotations: dict[str, str]
    ) -> None:
        pod = self.cluster.pod(namespace, name)
        if pod is None:
            raise BindError(f"pod {namespace}/{name} not found")
        known = (pod.get("metadata") or {}).get("uid")
        # An empty uid is no precondition, as for the apiserver's Binding.
        if known and uid and known != uid:
            raise BindError(f"pod {namespace}/{name} has uid {known}, not {uid}")
        if bound := (pod.get("spec") or {}).get("nodeName"):
            raise BindError(f"pod {namespace}/{name} is already bound to node {bound}")
        if self.cluster.node(node) is None:
            raise BindError(f"node {node} not found")
        self.cluster.upsert_pod(as_bound(pod, node, annotations))


def _resource(obj: Json) -> WorkloadResource | None:
    return resource_of(str(obj.get("apiVersion")), str(obj.get("kind")))


def _objects(documents: list[Any]) -> list[Json]:
    """The objects of the kinds the model keeps, checked, in file order."""
    found: list[Json] = []
    seen: set[tuple[str, str, str, str]] = set()
    for number, obj in enumerate(_flatten(documents), 1):
        kind = _kind(obj, number)
        if kind not in KINDS:
            continue
        _check(obj, kind, number)
        scoped = kind not in ("Node", "ResourceSlice", "DeviceClass")
        namespace, name = pod_key(obj) if scoped else ("", obj["metadata"]["name"])
        # batch and Volcano both have a kind Job: the API group tells them apart.
        identity = (str(obj.get("apiVersion") or "").rpartition("/")[0], kind, namespace, name)
        if identity in seen:
            shown = f"{namespace}/{name}" if namespace else name
            raise SnapshotError(f"object {number}: {kind} {shown} appears twice")
        seen.add(identity)
        found.append(obj)
    return found


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
            shown = _shown(document)
            raise SnapshotError(f"document {number} is {shown}, not an object or a list")


def _kind(obj: Any, number: int) -> str:
    if not isinstance(obj, dict):
        raise SnapshotError(f"object {number} is {_shown(obj)}, not an object")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise SnapshotError(f"object {number} has no kind")
    return kind


def _check(obj: Json, kind: str, number: int) -> None:
    for path in MAPS:
        value = _lookup(obj, path)
        if value is not None and not isinstance(value, dict):
            raise SnapshotError(f"object {number} ({kind}): {path} is not a map")
    name = (obj.get("metadata") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise SnapshotError(f"object {number} ({kind}) has no metadata.name")
    if kind == "Pod" and (problem := pod_problem(obj)) is not None:
        raise SnapshotError(f"object {number} (Pod {name}): {problem}")


def _lookup(obj: Json, path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
