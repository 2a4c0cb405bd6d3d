"""ResourceSlices of a node's RDMA NICs, as DRA drivers publish them, for the agent's tests.

dranet (`dra.net`) names a device after its PCI address (`pci-0000-18-00-0`) and publishes
`dra.net/pciAddress`, `dra.net/rdmaDevice` and `dra.net/ifName` (kubernetes-sigs/dranet
examples, tests/fixtures/dra-webhook/gb300-dranet-slice.yaml); the SR-IOV driver
(`sriovnetwork.k8snetworkplumbingwg.io`) names a VF `0000-08-00-2` and publishes `pciAddress`
and the standard `resource.kubernetes.io/pciBusID` (webhook/dra/representatives.py). The pool
of node-local devices is the node's name, as both drivers do.
"""

from __future__ import annotations

from kube_rdma.core.objects import Json
from testbed.builders.sysfs_tree import HGX_ROOTS

DRANET = "dra.net"
SRIOV = "sriovnetwork.k8snetworkplumbingwg.io"


def hgx_nic(i: int) -> tuple[str, str, str]:
    """(PCI address, RDMA device, netdev) of NIC `i` of sysfs_tree.hgx_8gpu_8nic."""
    bus = int(HGX_ROOTS[i], 16) + 3
    return f"0000:{bus:02x}:00.0", f"mlx5_{i}", f"enp{bus}s0np0"


def dranet_device(pci: str, rdma: str | None = None, netdev: str | None = None) -> Json:
    attributes: Json = {
        "dra.net/pciAddress": {"string": pci},
        "dra.net/rdma": {"bool": rdma is not None},
        "dra.net/numaNode": {"int": 0},
    }
    if rdma is not None:
        attributes["dra.net/rdmaDevice"] = {"string": rdma}
    if netdev is not None:
        attributes["dra.net/ifName"] = {"string": netdev}
    return {"name": "pci-" + pci.replace(":", "-").replace(".", "-"), "attributes": attributes}


def resource_slice(
    node: str,
    driver: str,
    devices: list[Json],
    name: str | None = None,
    pool: str | None = None,
    generation: int = 1,
) -> Json:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-{driver}-x7k2p"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def hgx_dranet_slice(node: str, nics: range = range(8), **kwargs: object) -> Json:
    """dranet's slice of the HGX node's NICs `nics`."""
    devices = [dranet_device(*hgx_nic(i)) for i in nics]
    return resource_slice(node, DRANET, devices, **kwargs)  # type: ignore[arg-type]


def sriov_vf(address: str) -> Json:
    return {
        "name": address.replace(":", "-").replace(".", "-"),
        "attributes": {
            "pciAddress": {"string": address},
            "resource.kubernetes.io/pciBusID": {"string": address},
            "rdmaCapable": {"bool": True},
        },
    }
