"""A pod's top owner: its controller's controller, up to the last workload object the extender
keeps (a PyTorchJob over its pods; a JobSet over the Job over its pods). KAI scheduler reads a
workload's topology annotations from there (NVIDIA/KAI-Scheduler docs/topology/README.md: the
example annotates the batch Job itself, not its pod template)."""

from __future__ import annotations

from extender.cluster.owners import resource_of
from extender.gangs.ownership import OwnerStore
from kube_rdma.core.objects import Json

_MAX_DEPTH = 8
"""Owner chains are short (pod, Job, JobSet, TrainJob); this bounds a cycle of bad references."""


def top_owner(pod: Json, owners: OwnerStore) -> Json | None:
    """The topmost owner the store holds; None when it holds none of the pod's."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    found = None
    current = pod
    for _ in range(_MAX_DEPTH):
        ref = _controller(current)
        resource = resource_of(str(ref.get("apiVersion")), str(ref.get("kind"))) if ref else None
        if ref is None or resource is None:
            break
        owner = owners.find(resource, namespace, str(ref.get("name")))
        if owner is None:
            break
        found = current = owner
    return found


def _controller(obj: Json) -> Json | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if isinstance(r, dict) and r.get("controller")), None)
