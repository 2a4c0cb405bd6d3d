"""The resource.k8s.io objects the cluster model reads, fed from a snapshot or a watch.

The API group is served as resource.k8s.io/v1 from Kubernetes 1.34, v1beta2 from 1.33 and
v1beta1 from 1.32 (with DynamicResourceAllocation enabled), and not at all before; the live
source lists each resource at the newest version discovery finds served
(kube_rdma/core/dra/shapes.py reads all three). DeviceTaintRules, which taint the devices they
select (kube_rdma/core/dra/taints.py), are served as v1alpha3 in 1.33-1.35, v1beta2 from 1.36
and v1 from 1.37, only where the device-taint feature and its API version are on.
"""

from __future__ import annotations

from collections.abc import Iterable

from extender.cluster.model import Cluster
from kube_rdma.core.dra.index import key_of
from kube_rdma.core.objects import Json

GROUP = "resource.k8s.io"
VERSIONS = ("v1", "v1beta2", "v1beta1")
PLURALS = {
    "ResourceSlice": "resourceslices",
    "ResourceClaim": "resourceclaims",
    "DeviceClass": "deviceclasses",
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "DeviceTaintRule": "devicetaintrules",
}
KINDS = frozenset(PLURALS)
RULE_VERSIONS = ("v1", "v1beta2", "v1alpha3")


def versions(plural: str) -> tuple[str, ...]:
    """The versions to look for, newest first."""
    return RULE_VERSIONS if plural == "devicetaintrules" else VERSIONS


def replace(cluster: Cluster, kind: str, items: Iterable[Json]) -> None:
    """Every object of `kind` there is, as a list or a snapshot gives them."""
    index = cluster.dra
    if kind == "ResourceSlice":
        cluster.dra_changed(index.replace_slices(items))
    elif kind == "ResourceClaim":
        cluster.dra_changed(index.replace_claims(items))
    elif kind == "DeviceClass":
        index.classes.clear()
        for obj in items:
            index.upsert_class(obj)
        cluster.dra_changed(set())
    elif kind == "ResourceClaimTemplate":
        index.templates.clear()
        for obj in items:
            index.upsert_template(obj)
        cluster.dra_changed(set())
    elif kind == "DeviceTaintRule":
        cluster.dra_changed(index.replace_taint_rules(items))


def apply(cluster: Cluster, kind: str, event: str, obj: Json) -> None:
    """One watch event (ADDED, MODIFIED, DELETED) for an object of `kind`."""
    index, key = cluster.dra, key_of(obj)
    deleted = event == "DELETED"
    if kind == "ResourceSlice":
        touched = index.delete_slice(key[1]) if deleted else index.upsert_slice(obj)
    elif kind == "ResourceClaim":
        touched = index.delete_claim(key) if deleted else index.upsert_claim(obj)
    elif kind == "DeviceTaintRule":
        touched = index.delete_taint_rule(key[1]) if deleted else index.upsert_taint_rule(obj)
    else:
        touched = set()
        if kind == "DeviceClass":
            index.delete_class(key[1]) if deleted else index.upsert_class(obj)
        elif kind == "ResourceClaimTemplate":
            index.delete_template(key) if deleted else index.upsert_template(obj)
    cluster.dra_changed(touched)
