"""What a profile asks of the node a pod lands on: the GPUDirect RDMA and network-level
annotations that the kube-rdma scheduler extender reads, and a required node affinity on the agent's
`kube-rdma.io/rdma-ready` label, which every scheduler honours.

Both add only what is missing and never override the pod: an annotation the pod set itself is
kept (with a warning when it disagrees), and a node selector term that already names the label
is left as it is.
"""

from __future__ import annotations

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from webhook.podspec import mapping, sequence
from webhook.profiles import Scheduling


def set_placement(pod: Json, scheduling: Scheduling, warnings: list[str]) -> None:
    if scheduling.require_gdr:
        require_gdr(mapping(pod, "metadata"), warnings)
    if scheduling.require_rdma_ready:
        require_rdma_ready(mapping(pod, "spec"))
    levels = (
        (keys.TOPOLOGY_REQUIRED, scheduling.topology_required, "scheduling.topologyRequired"),
        (keys.TOPOLOGY_PREFERRED, scheduling.topology_preferred, "scheduling.topologyPreferred"),
    )
    for key, level, setting in levels:
        if level is not None:
            annotate(mapping(pod, "metadata"), key, level, setting, warnings)


def require_gdr(metadata: Json, warnings: list[str]) -> None:
    annotations = mapping(metadata, "annotations")
    current = annotations.get(keys.REQUIRE_GDR)
    if current is None:
        annotations[keys.REQUIRE_GDR] = "true"
    elif str(current).lower() != "true":
        warnings.append(
            f"kube-rdma: pod sets {keys.REQUIRE_GDR}={current!r}, which is kept; its profile "
            "asks for nodes with GPUDirect RDMA (scheduling.requireGdr)"
        )


def annotate(metadata: Json, key: str, value: str, setting: str, warnings: list[str]) -> None:
    annotations = mapping(metadata, "annotations")
    current = annotations.get(key)
    if current is None:
        annotations[key] = value
    elif current != value:
        warnings.append(
            f"kube-rdma: pod sets {key}={current!r}, which is kept; its profile asks for "
            f"{value!r} ({setting})"
        )


def require_rdma_ready(spec: Json) -> None:
    """Adds `kube-rdma.io/rdma-ready In (true)` to every required node selector term: terms are
    ORed and the expressions of one term ANDed, so a term left without it would let the pod
    onto any node that term allows."""
    node_affinity = mapping(mapping(spec, "affinity"), "nodeAffinity")
    required = mapping(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
    terms = sequence(required, "nodeSelectorTerms")
    if not terms:
        terms.append({})
    for term in terms:
        if not isinstance(term, dict):
            continue
        expressions = sequence(term, "matchExpressions")
        if not any(isinstance(e, dict) and e.get("key") == keys.RDMA_READY for e in expressions):
            expressions.append({"key": keys.RDMA_READY, "operator": "In", "values": ["true"]})
