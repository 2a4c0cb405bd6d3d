"""What the apiserver does to a pod between two mutating webhook passes: defaulting (of
volumes, containers and env), and canonical quantities. A second pass must see the pod in this
stored form and change nothing."""

from __future__ import annotations

import copy
from decimal import Decimal

from kube_rdma.core.objects import Json
from kube_rdma.core.quantity import parse_quantity

_BINARY = [("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)]
_DECIMAL = [("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)]


def canonical(quantity: str) -> str:
    """resource.Quantity's canonical form for whole numbers: the largest suffix of the same
    family (binary for Ki..Ei input, decimal otherwise) that keeps the number whole."""
    value = parse_quantity(quantity)
    if value != value.to_integral_value() or value <= 0:
        return quantity
    whole = int(value)
    family = _BINARY if quantity.rstrip("0123456789").endswith("i") else _DECIMAL
    for suffix, unit in family:
        if whole % unit == 0:
            return f"{whole // unit}{suffix}"
    return str(Decimal(whole))


def stored(pod: Json) -> Json:
    """`pod` as the apiserver stores it after a webhook's patch."""
    pod = copy.deepcopy(pod)
    spec = pod.get("spec") or {}
    for volume in spec.get("volumes") or []:
        if "hostPath" in volume:
            volume["hostPath"].setdefault("type", "")
        empty_dir = volume.get("emptyDir")
        if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
            empty_dir["sizeLimit"] = canonical(empty_dir["sizeLimit"])
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        _default_container(container)
        for entry in container.get("env") or []:
            field_ref = (entry.get("valueFrom") or {}).get("fieldRef")
            if field_ref is not None:
                field_ref.setdefault("apiVersion", "v1")
        resources = container.get("resources") or {}
        for kind in ("requests", "limits"):
            bucket = resources.get(kind) or {}
            for name, amount in bucket.items():
                bucket[name] = canonical(str(amount))
    return pod


def _default_container(container: Json) -> None:
    """kubernetes pkg/apis/core/v1/defaults.go: SetDefaults_Container."""
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in container:
        image = str(container.get("image", ""))
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        latest = "@" not in image and tag in ("", "latest")
        container["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
