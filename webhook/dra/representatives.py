"""The devices the webhook judges DeviceClasses against: what the GPU driver, dranet and the
SR-IOV DRA driver publish, since the webhook reads no ResourceSlices (its RBAC is `get` on claims,
templates and classes only).

Quoted from published ResourceSlices where one exists (kept in tests/fixtures, which check each
device here against them), otherwise built from the attribute set the driver's code publishes,
with the values of the quoted device it derives from:

- `gpu.nvidia.com` (NVIDIA/k8s-dra-driver-gpu at 22407113, cmd/gpu-kubelet-plugin): a GB300 GPU
  (kubernetes-sigs/dranet examples/azure_aks_examples/gb300/resourceslice-gpu.yaml, gpu-0) and an
  A100 as the driver published it before 2026 (`index`, `minor`, `pcieBusID`; a VMware VKS
  guide); a MIG device (mig.go, CommonAttributesMig: `type: mig`, `parentUUID`, `profile` and
  the parent's product attributes) and a GPU bound to vfio-pci for a VM (deviceinfo.go,
  VfioDeviceInfo.GetDevice).
- `compute-domain.nvidia.com` (cmd/compute-domain-kubelet-plugin/deviceinfo.go): an IMEX channel
  and a daemon device, `type` and `id` each.
- `dra.net` (kubernetes-sigs/dranet examples): a GB300 ConnectX VF with RDMA (azure gb300
  resourceslice-dranet.yaml), an AWS EFA and an ENA without RDMA (aws_eks_examples/gpu-efa
  resourceslice-dranet.yaml), and Alibaba's eRDMA (site/content/docs/user/alibaba-ack-erdma.md,
  the attributes it lists).
- `sriovnetwork.k8snetworkplumbingwg.io` (k8snetworkplumbingwg/dra-driver-sriov at cd9404f0,
  pkg/devicestate/discovery.go): a ConnectX-7 VF with RDMA and one without.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kube_rdma.core.dra.shapes import AttributeValue, Device

_GPU, _CD, _NET, _SRIOV = (
    "gpu.nvidia.com",
    "compute-domain.nvidia.com",
    "dra.net",
    "sriovnetwork.k8snetworkplumbingwg.io",
)
_STD = "resource.kubernetes.io"


@dataclass(frozen=True)
class Representative:
    label: str
    """What the device is, for messages."""
    device: Device


def _device(
    driver: str, name: str, attributes: dict[str, AttributeValue], **capacity: int
) -> Device:
    qualified = {n if "/" in n else f"{driver}/{n}": v for n, v in attributes.items()}
    return Device(driver, "", name, qualified, {f"{driver}/{n}": v for n, v in capacity.items()})


_GB300_PRODUCT: Final[dict[str, AttributeValue]] = {
    "addressingMode": "ATS",
    "architecture": "Blackwell",
    "brand": "Nvidia",
    "cudaComputeCapability": "10.3.0",
    "cudaDriverVersion": "13.0.0",
    "driverVersion": "580.105.8",
    "productName": "NVIDIA GB300",
    f"{_STD}/pciBusID": "0008:06:00.0",
    f"{_STD}/pcieRoot": "pci0008:00",
}
_GB300_UUID = "GPU-ad11da28-7944-0f37-addf-86beae05fed3"

GB300_GPU = _device(
    _GPU, "gpu-0", {**_GB300_PRODUCT, "type": "gpu", "uuid": _GB300_UUID}, memory=298013687808
)
A100_GPU = _device(
    _GPU,
    "gpu-0",
    {
        "architecture": "Ampere",
        "brand": "NvidiaVCS",
        "cudaComputeCapability": "8.0.0",
        "cudaDriverVersion": "13.0.0",
        "driverVersion": "580.65.6",
        "index": 0,
        "minor": 0,
        "pcieBusID": "0000:03:00.0",
        "productName": "GRID A100-8C",
        f"{_STD}/pcieRoot": "pci0000:03",
        "type": "gpu",
        "uuid": "GPU-b8fe1770-6c2d-470f-905b-9ab700000000",
    },
    memory=8589934592,
)
MIG_DEVICE = _device(
    _GPU,
    "gpu-0-mig-1g35gb-19-0",
    {**_GB300_PRODUCT, "type": "mig", "parentUUID": _GB300_UUID, "profile": "1g.35gb"},
)
VFIO_GPU = _device(
    _GPU,
    "gpu-vfio-0",
    {
        "type": "vfio",
        "uuid": _GB300_UUID,
        "deviceID": "0x31c2",
        "vendorID": "0x10de",
        "numa": 0,
        "productName": "NVIDIA GB300",
        "iommuFDEnabled": False,
        f"{_STD}/pciBusID": "0008:06:00.0",
        f"{_STD}/pcieRoot": "pci0008:00",
    },
    addressableMemory=298013687808,
)
IMEX_CHANNEL = _device(_CD, "channel-0", {"type": "channel", "id": 0})
IMEX_DAEMON = _device(_CD, "daemon-0", {"type": "daemon", "id": 0})
GB300_RDMA_VF = _device(
    _NET,
    "pci-0101-00-00-0",
    {
        "azure.dra.net/placementGroupId": "c6c749e8-a38b-470e-8c94-2a7d00001bf0",
        "azure.dra.net/vmSize": "Standard_ND128isr_GB300_v6",
        "numaNode": 0,
        "pciAddress": "0101:00:00.0",
        "pciDevice": "ConnectX Family mlx5Gen Virtual Function",
        "pciSubsystem": "0240",
        "pciVendor": "Mellanox Technologies",
        "rdma": True,
        "rdmaDevice": "mlx5_0",
    },
)
EFA = _device(
    _NET,
    "pci-0000-10-1b-0",
    {
        "numaNode": 0,
        "pciAddress": "0000:10:1b.0",
        "pciDevice": "Elastic Fabric Adapter (EFA)",
        "pciSubsystem": "efa0",
        "pciVendor": "Amazon.com, Inc.",
        "rdma": True,
        "rdmaDevice": "rdmap16s27",
        f"{_STD}/pcieRoot": "pci0000:10",
    },
)
ENA = _device(
    _NET,
    "pci-0000-20-01-0",
    {
        "alias": "",
        "ebpf": False,
        "encapsulation": "ether",
        "ifName": "ens65",
        "ipv4": "192.168.155.224/19",
        "mac": "0e:96:fe:e8:a3:f5",
        "mtu": 9001,
        "numaNode": 0,
        "pciAddress": "0000:20:01.0",
        "pciDevice": "Elastic Network Adapter (ENA)",
        "pciSubsystem": "ec20",
        "pciVendor": "Amazon.com, Inc.",
        "rdma": False,
        "sriov": False,
        "state": "up",
        "type": "device",
        "virtual": False,
        f"{_STD}/pcieRoot": "pci0000:20",
    },
)

ERDMA = _device(
    _NET,
    "pci-0000-00-0b-0",
    {
        "pciAddress": "0000:00:0b.0",
        "rdma": True,
        "rdmaDevice": "erdma_0",
        "alibaba.dra.net/instanceType": "ecs.gn8is-2x.8xlarge",
        "alibaba.dra.net/erdma": True,
    },
)


def _sriov_vf(name: str, address: str, vf: int, rdma: bool) -> Device:
    return _device(
        _SRIOV,
        name,
        {
            "vendor": "15b3",
            "deviceID": "101e",
            "pfDeviceID": "1021",
            "pciAddress": address,
            "k8s.cni.cncf.io/deviceID": address,
            "PFName": "ens1f0np0",
            "EswitchMode": "legacy",
            "vfID": vf,
            f"{_STD}/pcieRoot": "pci0000:00",
            "pfPciAddress": "0000:08:00.0",
            f"{_STD}/pciBusID": address,
            "linkType": "ethernet",
            "rdmaCapable": rdma,
            "dra.net/numaNode": 0,
        },
    )


SRIOV_RDMA_VF = _sriov_vf("0000-08-00-2", "0000:08:00.2", 0, True)
SRIOV_PLAIN_VF = _sriov_vf("0000-08-00-3", "0000:08:00.3", 1, False)

REPRESENTATIVES: Final = (
    Representative("a GB300 GPU", GB300_GPU),
    Representative("an A100 GPU", A100_GPU),
    Representative("a MIG device", MIG_DEVICE),
    Representative("a GPU bound to vfio-pci", VFIO_GPU),
    Representative("an IMEX channel", IMEX_CHANNEL),
    Representative("an IMEX daemon", IMEX_DAEMON),
    Representative("dranet's ConnectX VF with RDMA", GB300_RDMA_VF),
    Representative("dranet's EFA", EFA),
    Representative("dranet's ENA without RDMA", ENA),
    Representative("dranet's Alibaba eRDMA", ERDMA),
    Representative("an SR-IOV VF with RDMA", SRIOV_RDMA_VF),
    Representative("an SR-IOV VF without RDMA", SRIOV_PLAIN_VF),
)
