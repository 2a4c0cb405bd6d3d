"""The published DRA objects of tests/fixtures/dra, and small builders for what they lack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kube_rdma.core.objects import Json

FIXTURES = Path(__file__).parents[3] / "fixtures" / "dra"


def load(name: str) -> list[Json]:
    documents = [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]
    return [i for d in documents for i in (d.get("items") or [d])]


def gpu(index: int, node: str = "n1", **extra: Any) -> Json:
    """A device as NVIDIA's GPU driver publishes it (attributes of tests/fixtures/dra)."""
    attributes = {
        "type": {"string": "gpu"},
        "index": {"int": index},
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x18 + index:02x}:00.0"},
        "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{index // 2:02x}"},
        "uuid": {"string": f"GPU-{node}-{index}"},
        **extra,
    }
    return {"name": f"gpu-{index}", "attributes": attributes}


def nic(index: int, rdma: bool = True, root: int | None = None) -> Json:
    """A device as dranet publishes it; `root` places it under another PCIe root than the
    GPU of the same index."""
    root = index // 2 if root is None else root
    return {
        "name": f"pci-0000-{0x20 + index:02x}-00-0",
        "attributes": {
            "dra.net/rdma": {"bool": rdma},
            "dra.net/pciAddress": {"string": f"0000:{0x20 + index:02x}:00.0"},
            "dra.net/numaNode": {"int": index // 4},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{root:02x}"},
        },
    }


def slice_(
    name: str,
    node: str,
    driver: str,
    devices: list[Json],
    generation: int = 1,
    count: int = 1,
    pool: str | None = None,
) -> Json:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    }


def gpu_slice(node: str, gpus: int = 8) -> Json:
    return slice_(f"{node}-gpu", node, "gpu.nvidia.com", [gpu(i, node) for i in range(gpus)])


def nic_slice(node: str, nics: int = 8) -> Json:
    return slice_(f"{node}-nic", node, "dra.net", [nic(i) for i in range(nics)])


def device_class(name: str, expression: str) -> Json:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


GPU_CLASS = device_class(
    "gpu.nvidia.com",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
)
NIC_CLASS = load("dranet-deviceclass-v1.yaml")[0]


def claim(
    name: str,
    requests: list[Json],
    namespace: str = "default",
    allocated: list[tuple[str, str, str]] | None = None,
    constraints: list[Json] | None = None,
) -> Json:
    obj: Json = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": requests}},
    }
    if constraints is not None:
        obj["spec"]["devices"]["constraints"] = constraints
    if allocated is not None:
        results = [{"request": "r", "driver": d, "pool": p, "device": n} for d, p, n in allocated]
        obj["status"] = {"allocation": {"devices": {"results": results}}}
    return obj


def exactly(name: str, device_class: str, count: int = 1, *selectors: str) -> Json:
    body: Json = {"deviceClassName": device_class, "count": count}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": body}


def pod(name: str, claims: list[Json], namespace: str = "default") -> Json:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": claims},
    }
