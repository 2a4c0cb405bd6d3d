"""The pod's devices as its ResourceClaims describe them: DRA device metadata files, read inside
the pod by `kube-rdma nccl-conf`.

Kubernetes 1.36 defines a standard for this (KEP-5304, DRA device metadata;
k8s.io/dynamic-resource-allocation `api/metadata` at release-1.36): the kubelet plugin of a
driver that supports it has one file per claim, request and driver bind-mounted read-only into
every container that references the claim, under /var/run/kubernetes.io/dra-device-attributes/:

    resourceclaims/<claim>/<request>/<driver>-metadata.json
    resourceclaimtemplates/<pod claim name>/<request>/<driver>-metadata.json

Each file is a stream of concatenated JSON objects, the same `DeviceMetadata` encoded once per
API version, newest first (`metadata.resource.k8s.io/v1alpha1` today); a reader takes the first
version it knows and skips newer ones (`devicemetadata.DecodeMetadataFromStream`). An object
holds `requests[].devices[]`, each `driver`, `pool`, `name`, `attributes` (as in a
ResourceSlice) and `networkData` (`interfaceName`, `ips` in CIDR form, `hardwareAddress`: the
claim's `status.devices[].networkData`, resource.k8s.io AllocatedDeviceStatus).

Where no driver writes these files, a ResourceClaim object itself (resource.k8s.io v1, v1beta2
or v1beta1; its `status.devices`) may be given as a file, say one the webhook or an admin mounts:
it has the network data but no attributes.

A file that cannot be read whole is refused with the file, the field and the reason: no device of
it is used.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from agent.dra_devices import (
    SliceError,
    attribute_values,
    expect_object,
    expect_string,
    pci_addresses,
    strings,
)

METADATA_DIR: Final = Path("/var/run/kubernetes.io/dra-device-attributes")
METADATA_VERSIONS: Final = ("metadata.resource.k8s.io/v1alpha1",)
METADATA_GROUP: Final = "metadata.resource.k8s.io/"
CLAIM_VERSIONS: Final = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")
IpInterface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


class ClaimDataError(Exception):
    """A claim data file that cannot be read; the message names the file, field and reason."""


@dataclass(frozen=True)
class ClaimDevice:
    driver: str
    pool: str
    name: str
    source: Path
    pci: frozenset[str] = frozenset()
    rdma: frozenset[str] = frozenset()
    interface: str | None = None
    ips: tuple[IpInterface, ...] = ()

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"

    @property
    def networked(self) -> bool:
        return self.interface is not None or bool(self.ips)


def claim_files(paths: Sequence[Path]) -> list[Path]:
    """The files named, and the `*.json` files under the directories named, in name order."""
    found: list[Path] = []
    for path in paths:
        found += sorted(p for p in path.rglob("*.json") if p.is_file()) if path.is_dir() else [path]
    return found


def read_claim_devices(paths: Sequence[Path]) -> list[ClaimDevice]:
    """Every device of every file; ClaimDataError for the first file that cannot be read."""
    return [device for path in claim_files(paths) for device in read_claim_file(path)]


def read_claim_file(path: Path) -> list[ClaimDevice]:
    try:
        text = path.read_text()
    except OSError as e:
        raise ClaimDataError(f"{path}: cannot read: {e.strerror}") from None
    seen = []
    for i, obj in enumerate(_stream(text, path)):
        where = f"{path}: object {i + 1}" if i else str(path)
        if not isinstance(obj, dict):
            raise ClaimDataError(f"{where}: expected an object, got {type(obj).__name__}")
        api, kind = obj.get("apiVersion"), obj.get("kind")
        seen.append(f"{api} {kind}")
        try:
            if api in METADATA_VERSIONS and kind == "DeviceMetadata":
                return list(_from_metadata(obj, path, where))
            if api in CLAIM_VERSIONS and kind == "ResourceClaim":
                return list(_from_claim(obj, path, where))
        except SliceError as e:
            raise ClaimDataError(str(e)) from None
        if not (isinstance(api, str) and api.startswith(METADATA_GROUP)):
            break  # a newer metadata version is skipped; anything else is not ours
    raise ClaimDataError(
        f"{path}: expected DeviceMetadata of {', '.join(METADATA_VERSIONS)} or a ResourceClaim "
        f"of {', '.join(CLAIM_VERSIONS)}, got {', '.join(seen) or 'nothing'}"
    )


def _stream(text: str, path: Path) -> Iterator[Any]:
    """The JSON values of a concatenated stream."""
    decoder = json.JSONDecoder()
    at = 0
    while (at := _skip_space(text, at)) < len(text):
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            raise ClaimDataError(f"{path}: not JSON: {e.msg} (line {e.lineno})") from None
        yield value


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _from_metadata(obj: dict[str, Any], path: Path, where: str) -> Iterator[ClaimDevice]:
    for i, request in enumerate(_list(obj.get("requests"), where, "requests")):
        at = f"requests[{i}]"
        request = _object(request, where, at)
        for j, device in enumerate(_list(request.get("devices"), where, f"{at}.devices")):
            yield _device(
                _object(device, where, f"{at}.devices[{j}]"),
                path,
                where,
                f"{at}.devices[{j}]",
                "name",
            )


def _from_claim(obj: dict[str, Any], path: Path, where: str) -> Iterator[ClaimDevice]:
    status = _object(obj.get("status") or {}, where, "status")
    for i, device in enumerate(_list(status.get("devices"), where, "status.devices")):
        yield _device(
            _object(device, where, f"status.devices[{i}]"),
            path,
            where,
            f"status.devices[{i}]",
            "device",
        )


def _device(obj: dict[str, Any], path: Path, where: str, at: str, name_key: str) -> ClaimDevice:
    driver, pool, name = (
        _string(obj.get(k), where, f"{at}.{k}") for k in ("driver", "pool", name_key)
    )
    attributes = attribute_values(
        _object(obj.get("attributes") or {}, where, f"{at}.attributes"), driver, where, at
    )
    network = _object(obj.get("networkData") or {}, where, f"{at}.networkData")
    interface = network.get("interfaceName")
    if interface is not None and not isinstance(interface, str):
        raise ClaimDataError(
            f"{where}: {at}.networkData.interfaceName: expected a string, got {interface!r}"
        )
    ips = []
    for k, ip in enumerate(_list(network.get("ips"), where, f"{at}.networkData.ips")):
        try:
            ips.append(ipaddress.ip_interface(ip if isinstance(ip, str) else ""))
        except ValueError:
            raise ClaimDataError(
                f"{where}: {at}.networkData.ips[{k}]: expected an address in CIDR form "
                f"(192.0.2.5/24), got {ip!r}"
            ) from None
    return ClaimDevice(
        driver,
        pool,
        name,
        path,
        pci=frozenset(pci_addresses(attributes, where, at)),
        rdma=frozenset(strings(attributes, "rdmaDevice")),
        interface=interface or None,
        ips=tuple(ips),
    )


def _object(value: Any, where: str, at: str) -> dict[str, Any]:
    return expect_object(value, where, at, ClaimDataError)


def _list(value: Any, where: str, at: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ClaimDataError(f"{where}: {at}: expected a list, got {value!r}")
    return value


def _string(value: Any, where: str, at: str) -> str:
    return expect_string(value, where, at, ClaimDataError)
