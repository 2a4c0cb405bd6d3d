"""Dynamic Resource Allocation: which DeviceClasses give GPUs and RDMA NICs, and the claim
template a profile attaches.

In a DRA cluster a container gets devices through `resources.claims`, naming an entry of the
pod's `spec.resourceClaims`, whose ResourceClaim (or ResourceClaimTemplate) requests devices of
a DeviceClass. Whether such a container is a GPU container, and whether its RDMA NICs come from
the claim, depends on the class. A class counts when its name is listed here, or when one of its
CEL selectors starts with `device.driver == "<driver>"` for a driver listed here.

The defaults are the published drivers' own names:
- NVIDIA's GPU DRA driver (NVIDIA/k8s-dra-driver-gpu, deployments/helm/.../deviceclass-gpu.yaml
  and deviceclass-mig.yaml): classes `gpu.nvidia.com` and `mig.nvidia.com`, both of driver
  `gpu.nvidia.com`. Its `vfio.gpu.nvidia.com` (a GPU passed to a VM) and the ComputeDomain
  classes (driver `compute-domain.nvidia.com`, IMEX channels) are not GPU containers.
- dranet (kubernetes-sigs/dranet, cmd/dranet/app.go): driver `dra.net`. It ships no class; its
  examples name theirs `dranet`, `dranet.net`, `dra.net` and `efa.networking.k8s.aws`, all
  selecting `device.driver == "dra.net"`, so the driver is what is listed.
- The NVIDIA Network Operator's DRA driver for SR-IOV (k8snetworkplumbingwg/dra-driver-sriov,
  pkg/consts/consts.go and its chart's deviceclass.yaml): class and driver
  `sriovnetwork.k8snetworkplumbingwg.io`.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import Field, field_validator, model_validator

from webhook.profiles.base import ProfileModel

NVIDIA_GPU_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com")
SRIOV_DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"
DRANET_DRIVER = "dra.net"
DEFAULT_CLAIM_NAME = "kube-rdma-gpu-nic"

# A DNS subdomain (DeviceClass, driver and template names) and a DNS label (a pod's claim name).
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _check_names(value: tuple[str, ...]) -> tuple[str, ...]:
    for name in value:
        if not _SUBDOMAIN.match(name) or len(name) > 253:
            raise ValueError(f"{name!r} is not a DeviceClass or driver name (a DNS subdomain)")
    return value


class Dra(ProfileModel):
    gpu_classes: tuple[str, ...] = NVIDIA_GPU_CLASSES
    """DeviceClasses whose devices are GPUs."""
    gpu_drivers: tuple[str, ...] = ()
    """DRA drivers whose classes give GPUs (a class selecting `device.driver == "<driver>"`)."""
    nic_classes: tuple[str, ...] = (SRIOV_DRIVER,)
    """DeviceClasses whose devices are RDMA NICs."""
    nic_drivers: tuple[str, ...] = (DRANET_DRIVER, SRIOV_DRIVER)
    """DRA drivers whose classes give RDMA NICs."""
    claim_templates: dict[int, str] = Field(default_factory=dict)
    """ResourceClaimTemplates of aligned GPU-NIC pairs by GPU count: a pod whose GPU container
    requests that many device-plugin GPUs gets the template instead (its requests for GPUs and
    RDMA resources dropped). The template must exist in the pod's namespace."""
    claim_name: str = DEFAULT_CLAIM_NAME
    """The name of the `spec.resourceClaims` entry that attaches the template."""

    _names = field_validator("gpu_classes", "gpu_drivers", "nic_classes", "nic_drivers")(
        _check_names
    )

    @field_validator("claim_name")
    @classmethod
    def _check_claim_name(cls, value: str) -> str:
        if not _LABEL.match(value) or len(value) > 63:
            raise ValueError(f"claimName {value!r} is not a DNS label (a pod's claim name)")
        return value

    @model_validator(mode="after")
    def _check(self) -> Self:
        for count, template in self.claim_templates.items():
            if count < 1:
                raise ValueError(f"claimTemplates[{count}]: a GPU count is at least 1")
            if not _SUBDOMAIN.match(template) or len(template) > 253:
                raise ValueError(
                    f"claimTemplates[{count}]: {template!r} is not a ResourceClaimTemplate name"
                )
        both = (set(self.gpu_classes) & set(self.nic_classes)) | (
            set(self.gpu_drivers) & set(self.nic_drivers)
        )
        if both:
            raise ValueError(
                f"{', '.join(sorted(both))} listed as both GPU and RDMA NIC; a class or driver "
                "gives one kind of device"
            )
        return self
