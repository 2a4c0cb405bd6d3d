"""The DRA form of a generated cluster: the same nodes, with their GPUs and RDMA NICs published
as ResourceSlices (NVIDIA's GPU driver and dranet, as tests/fixtures/dra shows them) instead of
extended resources, and the same pods asking for them through resource claims.

A running pod's devices are held by a claim generated from a template, allocated on its node
and reserved for it, as kube-scheduler and the ResourceClaim controller leave it; a pending pod
names the template only. A finished pod's claim is gone (the controller deletes a generated
claim with its pod's end), so it holds nothing, as in the device-plugin form.

`nodes` makes a mixed cluster: only those nodes publish slices, and only the pods bound to them
move to claims. Pending pods keep asking for `nvidia.com/gpu`, which DRA nodes serve through
the GPU DeviceClass's `extendedResourceName` (KEP-5004), so one gang can span both kinds.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Nic, Topology, decode
from testbed.clustergen.spec import GPU, RDMA_SHARED

GPU_DRIVER = "gpu.nvidia.com"
NIC_DRIVER = "dra.net"
CLAIM = "devices"
TERMINAL = ("Succeeded", "Failed")
GPU_CLASS: Json = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": GPU_DRIVER},
    "spec": {
        "selectors": [
            {
                "cel": {
                    "expression": "device.driver == 'gpu.nvidia.com' && "
                    "device.attributes['gpu.nvidia.com'].type == 'gpu'"
                }
            }
        ],
        "extendedResourceName": GPU,
    },
}
NIC_CLASS: Json = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "dranet"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
}
RDMA_SELECTOR = 'device.attributes["dra.net"].rdma == true'


def dra_form(
    objects: list[Json], nodes: Collection[str] | None = None, nics: bool = True
) -> list[Json]:
    """`objects` (clustergen's output) with the devices of `nodes` (every node when None)
    published through DRA; the input is not changed. With `nics` False only the GPUs are (the
    GPU driver first, the RDMA NICs left to their device plugin, as many clusters migrate)."""
    ours = _ours if nics else _gpu
    every = nodes is None
    chosen = set(nodes or ())
    converted = {
        _name(o) for o in objects if o.get("kind") == "Node" and (every or _name(o) in chosen)
    }
    found: list[Json] = [copy.deepcopy(GPU_CLASS), copy.deepcopy(NIC_CLASS)]
    templates: dict[tuple[str, int, int], Json] = {}
    taken: dict[str, list[int]] = {}
    nic_names: dict[str, list[str]] = {}
    for obj in objects:
        if obj.get("kind") == "Node" and _name(obj) in converted:
            found += _node(obj, nic_names, ours)
        elif obj.get("kind") == "Pod":
            node = (obj.get("spec") or {}).get("nodeName")
            if (node in converted) or (every and not node):
                found += _pod(obj, node, templates, taken, nic_names, ours)
            else:
                found.append(obj)
        else:
            found.append(obj)
    return [*found, *templates.values()]


def _name(obj: Json) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _node(obj: Json, nic_names: dict[str, list[str]], ours: Callable[[str], bool]) -> list[Json]:
    node = copy.deepcopy(obj)
    status = node.setdefault("status", {})
    counts = _devices(status.get("allocatable") or {}, ours)
    for field in ("capacity", "allocatable"):
        amounts = status.get(field) or {}
        for resource in [r for r in amounts if ours(r)]:
            del amounts[resource]
    annotation = (node["metadata"].get("annotations") or {}).get(keys.TOPOLOGY)
    topology = decode(annotation) if annotation else None
    name = _name(node)
    published = [node, _gpu_slice(name, counts[0], topology)]
    if counts[1]:
        nics = _nic_slice(name, counts[1], topology)
        nic_names[name] = [d["name"] for d in nics["spec"]["devices"]]
        published.append(nics)
    return published


def _ours(resource: str) -> bool:
    return resource == GPU or resource.startswith(RDMA_SHARED.split("/")[0] + "/")


def _gpu(resource: str) -> bool:
    return resource == GPU


def _devices(amounts: Json, ours: Callable[[str], bool]) -> tuple[int, int]:
    gpus = int(amounts.get(GPU, 0)) if ours(GPU) else 0
    nics = sum(int(v) for r, v in amounts.items() if ours(r) and r != GPU)
    return gpus, nics


def _slice(node: str, driver: str, devices: list[Json]) -> Json:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _gpu_slice(node: str, gpus: int, topology: Topology | None) -> Json:
    devices = []
    for i in range(gpus):
        pci = _pci(topology.gpus[i].pci if topology and i < len(topology.gpus) else None, i)
        attributes = {
            "type": {"string": "gpu"},
            "index": {"int": i},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "uuid": {"string": f"GPU-{node}-{i}"},
            "resource.kubernetes.io/pciBusID": {"string": pci},
            "resource.kubernetes.io/pcieRoot": {"string": _root(pci)},
        }
        devices.append({"name": f"gpu-{i}", "attributes": attributes})
    return _slice(node, GPU_DRIVER, devices)


def _nic_slice(node: str, nics: int, topology: Topology | None) -> Json:
    devices = []
    for i in range(nics):
        known = topology.nics[i] if topology and i < len(topology.nics) else None
        pci = _pci(known.pci if known else None, 0x40 + i)
        attributes = {
            "dra.net/rdma": {"bool": True},
            "dra.net/pciAddress": {"string": pci},
            "dra.net/numaNode": {"int": (known.numa if known and known.numa else 0)},
            "dra.net/ifName": {"string": known.name if known else f"rdma{i}"},
            "resource.kubernetes.io/pcieRoot": {"string": _nic_root(i, known, topology)},
        }
        devices.append(
            {"name": "pci-" + pci.replace(":", "-").replace(".", "-"), "attributes": attributes}
        )
    return _slice(node, NIC_DRIVER, devices)


def _root(gpu_pci: str) -> str:
    """The root a GPU is published under: one per GPU here, shared with its nearest NICs."""
    return f"pci{gpu_pci[:4]}:{gpu_pci[5:7]}"


def _nic_root(index: int, known: Nic | None, topology: Topology | None) -> str:
    """Under the root of the GPU the NIC pairs best with (as dranet publishes
    `resource.kubernetes.io/pcieRoot`, which a GPU and a NIC on one PCIe switch share); the
    GPU of its own index without a topology."""
    if known is not None and topology is not None:
        paired = [p for p in topology.pairs if p.nic == known.name]
        if paired:
            best = min(paired, key=lambda p: (p.level.rank, p.gpu))
            gpus = {g.index: g.pci for g in topology.gpus}
            return _root(_pci(gpus.get(best.gpu), best.gpu))
    return _root(_pci(None, index))


def _pci(address: str | None, fallback: int) -> str:
    return address.lower() if address else f"0000:{fallback:02x}:00.0"


def _pod(
    obj: Json,
    node: str | None,
    templates: dict[tuple[str, int, int], Json],
    taken: dict[str, list[int]],
    nic_names: dict[str, list[str]],
    ours: Callable[[str], bool],
) -> list[Json]:
    pod = copy.deepcopy(obj)
    gpus, nics = _strip(pod, ours)
    if not gpus and not nics:
        return [pod]
    namespace = str(pod["metadata"].get("namespace") or "default")
    template = _template(namespace, gpus, nics, templates)
    pod["spec"]["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": template}]
    phase = (pod.get("status") or {}).get("phase")
    if not node or phase in TERMINAL:
        return [pod]
    claim_name = f"{_name(pod)}-{CLAIM}"
    pod["status"]["resourceClaimStatuses"] = [{"name": CLAIM, "resourceClaimName": claim_name}]
    slots = taken.setdefault(node, [0, 0])
    results = [_result("gpu", GPU_DRIVER, node, f"gpu-{slots[0] + i}") for i in range(gpus)]
    slots[0] += gpus
    held = nic_names.get(node, [])[slots[1] : slots[1] + nics]
    slots[1] += nics
    results += [_result("nic", NIC_DRIVER, node, n) for n in held]
    return [pod, _claim(pod, claim_name, templates[namespace, gpus, nics], node, results)]


def _strip(pod: Json, ours: Callable[[str], bool]) -> tuple[int, int]:
    """Removes the GPU and RDMA requests (those `ours` names); what they were."""
    gpus = nics = 0
    for container in pod["spec"].get("containers") or []:
        resources = container.get("resources") or {}
        counted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        gpus += int(counted.get(GPU, 0)) if ours(GPU) else 0
        nics += sum(int(v) for r, v in counted.items() if ours(r) and r != GPU)
        for field in ("limits", "requests"):
            for resource in [r for r in resources.get(field) or {} if ours(r)]:
                del resources[field][resource]
        if any(ours(r) for r in counted):
            resources["claims"] = [{"name": CLAIM}]
    return gpus, nics


def _template(
    namespace: str, gpus: int, nics: int, templates: dict[tuple[str, int, int], Json]
) -> str:
    name = f"gpus-{gpus}-nics-{nics}"
    if (namespace, gpus, nics) not in templates:
        requests = []
        if gpus:
            requests.append(
                {"name": "gpu", "exactly": {"deviceClassName": GPU_DRIVER, "count": gpus}}
            )
        if nics:
            exact = {
                "deviceClassName": "dranet",
                "count": nics,
                "selectors": [{"cel": {"expression": RDMA_SELECTOR}}],
            }
            requests.append({"name": "nic", "exactly": exact})
        templates[namespace, gpus, nics] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": requests}}},
        }
    return name


def _result(request: str, driver: str, node: str, device: str) -> Json:
    return {"request": request, "driver": driver, "pool": node, "device": device}


def _claim(pod: Json, name: str, template: Json, node: str, results: list[Json]) -> Json:
    meta = pod["metadata"]
    selector = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace") or "default",
            "annotations": {"resource.kubernetes.io/pod-claim-name": CLAIM},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "controller": True,
                }
            ],
        },
        "spec": copy.deepcopy(template["spec"]["spec"]),
        "status": {
            "allocation": {
                "devices": {"results": results},
                "nodeSelector": {"nodeSelectorTerms": [selector]},
            },
            "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta.get("uid", "")}],
        },
    }
