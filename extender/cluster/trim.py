"""What the extender keeps of each object it caches: the fields some part of it reads, nothing more.

A Pod as a watch delivers it is 5-10 KB of JSON and some 300 Python objects once decoded: its
managedFields, container statuses, the defaults admission filled in, the projected token volume.
The extender reads a few of them, so the cache would grow with what it never reads. Each Node,
Pod and workload object is trimmed as it arrives (client-go's SetTransform does the same for an
informer's store), so memory follows the useful data. What each one keeps, and who reads it:
- Pod: name, namespace, uid, labels, annotations and the controller's ownerReference (the pod's
  view, gang identity); spec.nodeName and each container's name, resources and the env entries
  that read a field (the pod's requests, the annotations a bind must write); spec.nodeSelector,
  the required node affinity and the tolerations (the nodes a gang member may use); priority,
  preemptionPolicy and activeDeadlineSeconds (preemption and holds); status.phase; the
  PodScheduled condition's time, and spec.schedulerName (explain says who bound a pod and when);
  spec.resourceClaims and status.resourceClaimStatuses (the devices its DRA claims ask for);
  spec.schedulingGroup and spec.workloadRef (its scheduling.k8s.io gang).
  Annotations are kept but for a few large ones nothing here reads (NOT_READ_ANNOTATIONS), since
  gang identity looks up keys of many schedulers and queues.
- Node: name, labels, the kube-rdma.io/ annotations (the topology document),
  status.allocatable, and what decides whether pods may use it at all: spec.taints,
  spec.unschedulable and the type and status of the conditions that imply a taint (Ready, the
  pressures).
- A workload that owns pods (PyTorchJob, JobSet, ...): everything but managedFields and status;
  its spec says how many pods its gang has.
A field read anywhere new must be kept here too; tests/extender/cluster/test_trim.py checks that
every answer is the same for trimmed and whole objects.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from kube_rdma.core import keys
from kube_rdma.core.nodeconstraints import CONDITION_TYPES
from kube_rdma.core.objects import Json

NOT_READ_ANNOTATIONS: Final = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        "k8s.v1.cni.cncf.io/network-status",
        "k8s.v1.cni.cncf.io/networks-status",
    }
)
"""Large annotations that other tools write on pods and the extender never reads."""
POD_METADATA: Final = ("name", "generateName", "namespace", "uid", "resourceVersion", "labels")
CONTAINER_LISTS: Final = ("containers", "initContainers")
REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"


DISRUPTION = "DisruptionTarget"
SCHEDULED = "PodScheduled"
DEFAULT_SCHEDULER = "default-scheduler"
"""What an absent spec.schedulerName means (the apiserver fills it in): trimmed as absent."""


def trim_pod(pod: Json) -> Json:
    """The parts of a Pod the extender reads. A part of the wrong JSON type (a `status` that is
    a list) is dropped as if absent: the extender's HTTP verbs refuse such a pod first
    (extender/protocol.py), and a watch never delivers one."""
    meta = _object(pod.get("metadata"))
    kept: Json = {k: meta[k] for k in POD_METADATA if k in meta}
    _intern(kept, "namespace")
    annotations = _object(meta.get("annotations"))
    if annotations:
        kept["annotations"] = {
            k: v for k, v in annotations.items() if k not in NOT_READ_ANNOTATIONS
        }
    controller = _controller(meta.get("ownerReferences"))
    if controller is not None:
        kept["ownerReferences"] = [controller]
    spec = _object(pod.get("spec"))
    trimmed_spec: Json = {
        name: [_container(c) for c in spec[name] if isinstance(c, dict)]
        for name in CONTAINER_LISTS
        if isinstance(spec.get(name), list) and spec[name]
    }
    if spec.get("nodeName"):
        trimmed_spec["nodeName"] = sys.intern(str(spec["nodeName"]))
    if spec.get("schedulerName") not in (None, "", DEFAULT_SCHEDULER):
        trimmed_spec["schedulerName"] = sys.intern(str(spec["schedulerName"]))
    # Kept only where they differ from what their absence means (priority 0, may preempt).
    if spec.get("priority"):
        trimmed_spec["priority"] = spec["priority"]
    if spec.get("preemptionPolicy") == "Never":
        trimmed_spec["preemptionPolicy"] = "Never"
    if spec.get("priorityClassName"):  # who may preempt across namespaces (--preempt-across-*)
        trimmed_spec["priorityClassName"] = sys.intern(str(spec["priorityClassName"]))
    if spec.get("activeDeadlineSeconds") is not None:  # when a held domain drains at the latest
        trimmed_spec["activeDeadlineSeconds"] = spec["activeDeadlineSeconds"]
    trimmed_spec.update(_node_constraints(spec))
    if spec.get("resourceClaims"):
        trimmed_spec["resourceClaims"] = spec["resourceClaims"]
    for group in ("schedulingGroup", "workloadRef"):  # its scheduling.k8s.io gang
        if spec.get(group):
            trimmed_spec[group] = spec[group]
    result: Json = {**_type(pod), "metadata": kept, "spec": trimmed_spec}
    status = _pod_status(_object(pod.get("status")))
    if status:
        result["status"] = status
    return result


def _pod_status(status: Json) -> Json:
    """The phase, the start time (preemption spares pods that ran longer), the node
    kube-scheduler's preemption nominated for a pending pod, a DisruptionTarget condition
    (a pod kube-scheduler preempted says so) and when a PodScheduled condition became True (when
    the pod was bound)."""
    kept: Json = {}
    if status.get("phase") is not None:
        kept["phase"] = sys.intern(str(status["phase"]))
    if status.get("startTime"):
        kept["startTime"] = status["startTime"]
    if status.get("nominatedNodeName"):
        kept["nominatedNodeName"] = sys.intern(str(status["nominatedNodeName"]))
    conditions = [_object(c) for c in _list(status.get("conditions"))]
    kept_conditions = [c for c in conditions if c.get("type") == DISRUPTION]
    kept_conditions += [
        {"type": SCHEDULED, "status": "True", "lastTransitionTime": c["lastTransitionTime"]}
        for c in conditions
        if c.get("type") == SCHEDULED and c.get("status") == "True" and c.get("lastTransitionTime")
    ]
    if kept_conditions:
        kept["conditions"] = kept_conditions
    if status.get("resourceClaimStatuses"):
        kept["resourceClaimStatuses"] = status["resourceClaimStatuses"]
    return kept


def trim_node(node: Json) -> Json:
    """The parts of a Node the extender reads."""
    meta = node.get("metadata") or {}
    kept: Json = {k: meta[k] for k in ("name", "resourceVersion", "labels") if k in meta}
    ours = {k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith(keys.PREFIX)}
    if ours:
        kept["annotations"] = ours
    status = node.get("status") or {}
    result: Json = {**_type(node), "metadata": kept}
    spec = {k: v for k, v in (node.get("spec") or {}).items() if k in ("taints", "unschedulable")}
    if spec:
        result["spec"] = spec
    kept_status: Json = {}
    if status.get("allocatable") is not None:
        kept_status["allocatable"] = status["allocatable"]
    conditions = [
        {"type": c["type"], "status": c.get("status")}
        for c in status.get("conditions") or []
        if isinstance(c, dict) and c.get("type") in CONDITION_TYPES
    ]
    if conditions:
        kept_status["conditions"] = conditions
    if kept_status:
        result["status"] = kept_status
    return result


def trim_workload(obj: Json) -> Json:
    """A workload object without its managedFields and status."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {k: v for k, v in obj.items() if k != "status"} | {"metadata": meta}


def _controller(references: Any) -> Json | None:
    for ref in _list(references):
        if isinstance(ref, dict) and ref.get("controller"):
            return {
                k: ref[k] for k in ("apiVersion", "kind", "name", "uid", "controller") if k in ref
            }
    return None


def _node_constraints(spec: Json) -> Json:
    """nodeSelector, tolerations and the required node affinity: the rest of the affinity
    (preferences, pod affinity) is kube-scheduler's alone."""
    kept: Json = {k: spec[k] for k in ("nodeSelector", "tolerations") if spec.get(k)}
    affinity = _object(_object(spec.get("affinity")).get("nodeAffinity"))
    required = affinity.get(REQUIRED)
    if required is not None:
        kept["affinity"] = {"nodeAffinity": {REQUIRED: required}}
    return kept


def _container(container: Json) -> Json:
    kept: Json = {k: container[k] for k in ("name", "resources") if k in container}
    env = [
        e
        for e in _list(container.get("env"))
        if _object(_object(e).get("valueFrom")).get("fieldRef")
    ]
    if env:
        kept["env"] = env
    return kept


def _object(value: Any) -> Json:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _type(obj: Json) -> Json:
    """apiVersion and kind, shared by every object of the type."""
    return {k: sys.intern(obj[k]) for k in ("apiVersion", "kind") if isinstance(obj.get(k), str)}


def _intern(mapping: Json, key: str) -> None:
    if isinstance(mapping.get(key), str):
        mapping[key] = sys.intern(mapping[key])
