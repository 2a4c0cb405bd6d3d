"""A snapshot with its names and addresses replaced, consistently: what an admin can hand to
someone outside the company and still get the same simulation.

Nodes become node-0001..., namespaces ns-001..., pods pod-00001..., workload objects
workload-0001... (in sorted order of the old names, so the same cluster gives the same file);
wherever an old name appears as a whole value (a label, an annotation, an ownerReference, the
hostname label) the new one replaces it. In each node's topology document, GIDs and their IP
addresses, netdev names and PCI addresses are replaced by made-up ones, the same old value
always by the same new one within a node, so the document still pairs the same GPUs and NICs.
Node annotations other than kube-rdma's are dropped. In the DRA objects every whole value that
is an old name is replaced (pools and node selectors name nodes, pods name their claims), the
attributes that identify a device (UUID, PCI and MAC addresses, IPs, interface names) are
dropped, and DeviceClasses keep their names: claims and templates refer to them, and they name
no one's hardware.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable
from typing import Any

import orjson

from kube_rdma.core import keys
from kube_rdma.core.objects import Json


def anonymize(objects: list[Json]) -> list[Json]:
    names = _Names(objects)
    return [_object(obj, names) for obj in objects]


class _Names:
    def __init__(self, objects: list[Json]) -> None:
        def meta(o: Json, field: str) -> str | None:
            value = (o.get("metadata") or {}).get(field)
            return str(value) if value else None

        nodes = {meta(o, "name") for o in objects if o.get("kind") == "Node"}
        pods = {meta(o, "name") for o in objects if o.get("kind") == "Pod"}
        others = {
            meta(o, "name") for o in objects if o.get("kind") not in ("Node", "Pod", "DeviceClass")
        }
        namespaces = {meta(o, "namespace") for o in objects}
        self.map: dict[str, str] = {}
        for template, found in (
            ("node-{:04d}", nodes),
            ("ns-{:03d}", namespaces),
            ("pod-{:05d}", pods),
            ("workload-{:04d}", others),
        ):
            for index, name in enumerate(sorted(n for n in found if n), 1):
                self.map.setdefault(name, template.format(index))

    def __call__(self, value: Any) -> Any:
        return self.map.get(value, value) if isinstance(value, str) else value


DRA_KINDS = frozenset({"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"})
IDENTIFYING = frozenset(
    {"uuid", "pcieBusID", "pciBusID", "pciAddress", "pfPciAddress", "mac", "ipv4", "ipv6",
     "ifName", "interfaceName", "PFName", "alias", "cloudNetwork"}
)  # fmt: skip


def _renamed_deep(value: Any, names: _Names) -> Any:
    if isinstance(value, dict):
        return {k: _renamed_deep(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed_deep(v, names) for v in value]
    return names(value)


def _dra_object(obj: Json, names: _Names) -> Json:
    result: Json = _renamed_deep(obj, names)
    result["metadata"] = {
        k: v for k, v in result.get("metadata", {}).items() if k in ("name", "namespace")
    }
    slice_devices = (
        (result.get("spec") or {}).get("devices") if obj["kind"] == "ResourceSlice" else None
    )
    for device in slice_devices or []:
        body = device.get("basic") if isinstance(device.get("basic"), dict) else device
        attributes = body.get("attributes") or {}
        body["attributes"] = {
            k: v for k, v in attributes.items() if k.rpartition("/")[2] not in IDENTIFYING
        }
    return result


def _object(obj: Json, names: _Names) -> Json:
    if obj.get("kind") in DRA_KINDS:
        return _dra_object(obj, names)
    result = dict(obj)
    meta = dict(obj.get("metadata") or {})
    for field in ("name", "namespace"):
        if field in meta:
            meta[field] = names(meta[field])
    meta.pop("uid", None)
    meta["labels"] = {k: names(v) for k, v in (meta.get("labels") or {}).items()}
    annotations = meta.get("annotations") or {}
    if obj.get("kind") == "Node":
        annotations = {k: v for k, v in annotations.items() if k.startswith(keys.PREFIX)}
        if keys.TOPOLOGY in annotations:
            annotations[keys.TOPOLOGY] = topology(annotations[keys.TOPOLOGY])
    meta["annotations"] = {k: names(v) for k, v in annotations.items()}
    if meta.get("ownerReferences"):
        meta["ownerReferences"] = [
            {k: names(v) for k, v in ref.items() if k != "uid"} for ref in meta["ownerReferences"]
        ]
    result["metadata"] = meta
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("nodeName"):
        result["spec"] = {**spec, "nodeName": names(spec["nodeName"])}
    if isinstance(spec, dict) and spec.get("resourceClaims"):
        claims = _renamed_deep(spec["resourceClaims"], names)
        result["spec"] = {**result["spec"], "resourceClaims": claims}
    status = obj.get("status")
    if isinstance(status, dict) and status.get("resourceClaimStatuses"):
        generated = _renamed_deep(status["resourceClaimStatuses"], names)
        result["status"] = {**status, "resourceClaimStatuses": generated}
    return result


def topology(annotation: str) -> str:
    """The document with GIDs, IPs, netdevs and PCI addresses replaced (a broken document is
    left out: the extender reads it as no document either way)."""
    try:
        document = orjson.loads(annotation)
    except orjson.JSONDecodeError:
        return "{}"
    renames: dict[tuple[str, str], str] = {}

    def renamed(kind: str, value: Any, make: Callable[[int], str]) -> Any:
        if not isinstance(value, str):
            return value
        key = (kind, value)
        if key not in renames:
            renames[key] = make(sum(k == kind for k, _ in renames) + 1)
        return renames[key]

    for gpu in document.get("gpus") or []:
        gpu["pci"] = renamed("pci", gpu.get("pci"), _pci)
    for nic in document.get("nics") or []:
        nic["pci"] = renamed("pci", nic.get("pci"), _pci)
        for port in nic.get("ports") or []:
            port["netdev"] = renamed("netdev", port.get("netdev"), lambda n: f"rdma{n}")
            for gid in port.get("gids") or []:
                old_ip, old_gid = gid.get("ip"), gid.get("gid")
                gid["netdev"] = renamed("netdev", gid.get("netdev"), lambda n: f"rdma{n}")
                gid["ip"] = renamed("ip", old_ip, functools.partial(_ip, old_ip))
                gid["gid"] = renamed("gid", old_gid, functools.partial(_gid, old_gid))
    return orjson.dumps({k: v for k, v in document.items() if v is not None}).decode()


def _pci(number: int) -> str:
    return f"0000:{number:02x}:00.0"


def _ip(old: Any, number: int) -> str:
    if isinstance(old, str) and ":" not in old:
        return str(ipaddress.IPv4Address(0x0A000000 + number))
    return f"fe80::{number:x}"


def _gid(old: Any, number: int) -> str:
    if isinstance(old, str) and old.startswith("::ffff:"):
        return "::ffff:" + str(ipaddress.IPv4Address(0x0A000000 + number))
    return f"fe80::{number:x}"
