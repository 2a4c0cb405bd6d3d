"""Which published devices are GPUs and which are RDMA NICs: configuration, with defaults for
the drivers that publish them today.

- NVIDIA's GPU DRA driver (`gpu.nvidia.com`, NVIDIA/k8s-dra-driver-gpu
  cmd/gpu-kubelet-plugin/deviceinfo.go): attribute `type` is `gpu` for a whole GPU (`mig` and
  `vfio` devices are other kinds).
- dranet (`dra.net`, google/dranet pkg/apis/attributes.go): every network interface is a
  device; `dra.net/rdma` is true for those with an RDMA device.
- The SR-IOV DRA driver the NVIDIA Network Operator installs
  (`sriovnetwork.k8snetworkplumbingwg.io`, k8snetworkplumbingwg/dra-driver-sriov
  pkg/consts/consts.go): one device per VF, `rdmaCapable` true for RDMA VFs.

A device's kind is decided by its driver and one attribute's value, not by CEL: every device of
a cluster is classified when its slice arrives, and a CEL evaluation costs about 0.4 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kube_rdma.core.dra.shapes import AttributeValue, Device

Kind = Literal["gpu", "nic"]

GPU_DRIVER = "gpu.nvidia.com"
DRANET_DRIVER = "dra.net"
SRIOV_DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"


@dataclass(frozen=True)
class KindRule:
    driver: str
    kind: Kind
    attribute: str
    """Fully qualified (`domain/id`)."""
    equals: AttributeValue


DEFAULT_KIND_RULES: tuple[KindRule, ...] = (
    KindRule(GPU_DRIVER, "gpu", f"{GPU_DRIVER}/type", "gpu"),
    KindRule(DRANET_DRIVER, "nic", f"{DRANET_DRIVER}/rdma", True),
    KindRule(SRIOV_DRIVER, "nic", f"{SRIOV_DRIVER}/rdmaCapable", True),
)


def parse_rule(text: str) -> KindRule:
    """`KIND=DRIVER:ATTRIBUTE=VALUE` (`nic=dra.net:rdma=true`) as a KindRule; ValueError saying
    what is wrong. An unqualified attribute is the driver's; `true`/`false` are booleans and a
    number an integer, as the slices publish them."""
    kind, _, rest = text.partition("=")
    driver, _, condition = rest.partition(":")
    attribute, _, value = condition.partition("=")
    if kind not in ("gpu", "nic") or not driver or not attribute or not value:
        raise ValueError(
            f"{text!r} is not KIND=DRIVER:ATTRIBUTE=VALUE with KIND gpu or nic "
            "(e.g. nic=dra.net:rdma=true)"
        )
    parsed: AttributeValue = value
    if value in ("true", "false"):
        parsed = value == "true"
    elif value.lstrip("-").isdigit():
        parsed = int(value)
    qualified = attribute if "/" in attribute else f"{driver}/{attribute}"
    return KindRule(driver, "gpu" if kind == "gpu" else "nic", qualified, parsed)


def kind_of(device: Device, rules: Sequence[KindRule] = DEFAULT_KIND_RULES) -> Kind | None:
    for rule in rules:
        if device.driver == rule.driver and device.attributes.get(rule.attribute) == rule.equals:
            return rule.kind
    return None


# Where the drivers publish a device's PCI address and NUMA node, best first. The standard
# `resource.kubernetes.io/pciBusID` replaced the GPU driver's own `pcieBusID` in 2026
# (NVIDIA/k8s-dra-driver-gpu dcdeb68, "use standard device attribute for PCIBusID"); dranet and
# the SR-IOV driver publish `dra.net/numaNode`.
PCI_ADDRESS_ATTRIBUTES = (
    "resource.kubernetes.io/pciBusID",
    f"{GPU_DRIVER}/pcieBusID",
    f"{DRANET_DRIVER}/pciAddress",
    f"{SRIOV_DRIVER}/pciAddress",
)
NUMA_ATTRIBUTES = (f"{DRANET_DRIVER}/numaNode",)
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"


def pci_address(device: Device) -> str | None:
    """The device's PCI address, lower case with its domain (`0000:c8:00.0`)."""
    for name in PCI_ADDRESS_ATTRIBUTES:
        value = device.attributes.get(name)
        if isinstance(value, str) and value:
            return value.lower() if value.count(":") == 2 else f"0000:{value.lower()}"
    return None


def numa_node(device: Device) -> int | None:
    for name in NUMA_ATTRIBUTES:
        value = device.attributes.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None
