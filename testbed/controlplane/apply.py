"""Create objects from manifests: the resource path of each kind the tests apply."""

from __future__ import annotations

from collections.abc import Iterable

from kube_rdma.core.objects import Json
from testbed.controlplane.rest import ApiError, Rest

RESOURCES: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False),
    "Node": ("nodes", False),
    "ServiceAccount": ("serviceaccounts", True),
    "ConfigMap": ("configmaps", True),
    "Secret": ("secrets", True),
    "Service": ("services", True),
    "Pod": ("pods", True),
    "ClusterRole": ("clusterroles", False),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "PriorityClass": ("priorityclasses", False),
    "MutatingWebhookConfiguration": ("mutatingwebhookconfigurations", False),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
}
"""Built-in kinds: their plural and whether they live in a namespace. Custom kinds are given
by `custom_path`."""


def group_prefix(api_version: str) -> str:
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


def collection_path(obj: Json, plural: str | None = None, namespaced: bool | None = None) -> str:
    """The collection an object is created in."""
    kind = obj["kind"]
    if plural is None or namespaced is None:
        if kind not in RESOURCES:
            raise ValueError(f"no resource path known for kind {kind}: pass plural and scope")
        plural, namespaced = RESOURCES[kind]
    prefix = group_prefix(obj["apiVersion"])
    if namespaced:
        return f"{prefix}/namespaces/{obj['metadata']['namespace']}/{plural}"
    return f"{prefix}/{plural}"


def object_path(obj: Json, plural: str | None = None, namespaced: bool | None = None) -> str:
    return f"{collection_path(obj, plural, namespaced)}/{obj['metadata']['name']}"


def create(api: Rest, obj: Json, plural: str | None = None, namespaced: bool | None = None) -> Json:
    return api.post(collection_path(obj, plural, namespaced), obj)


def apply_all(api: Rest, objects: Iterable[Json]) -> None:
    """Create each object, or replace it where it exists (keeping its resourceVersion)."""
    for obj in objects:
        try:
            create(api, obj)
        except ApiError as e:
            if e.status != 409:
                raise
            current = api.get(object_path(obj))
            obj = {**obj, "metadata": {**obj["metadata"], **_version(current)}}
            api.call("PUT", object_path(obj), obj)


def _version(current: Json) -> Json:
    return {"resourceVersion": current["metadata"]["resourceVersion"]}
