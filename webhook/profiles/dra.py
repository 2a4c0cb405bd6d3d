"""Dynamic Resource Allocation: which DeviceClasses give GPUs and RDMA NICs, and the claim
template a profile attaches.

In a DRA cluster a container gets devices through `resources.claims`, naming an entry of the
pod's `spec.resourceClaims`, whose ResourceClaim (or ResourceClaimTemplate) requests devices of
a DeviceClass. Whether such a container is a GPU container, and whether its RDMA NICs come from
the claim, depends on the class. A class counts when its name is listed here; any other class
is judged by evaluating its CEL selectors (with the request's own) against representative
devices of the published drivers (`webhook.dra.classes`), a device's kind being the extender's
(`kube_rdma.core.dra.kinds`) unless its driver is listed here.

The defaults:
- NVIDIA's GPU DRA driver (NVIDIA/k8s-dra-driver-gpu, deployments/helm/.../deviceclass-gpu.yaml):
  class `gpu.nvidia.com`, listed by name so that it is never read. Its `mig.nvidia.com` (a MIG
  slice, not a whole GPU), `vfio.gpu.nvidia.com` (a GPU passed to a VM) and the ComputeDomain
  classes (IMEX channels) give no GPU, as their CEL says.
- The NVIDIA Network Operator's DRA driver for SR-IOV (k8snetworkplumbingwg/dra-driver-sriov,
  its chart's deviceclass.yaml): class `sriovnetwork.k8snetworkplumbingwg.io`, which takes
  every VF of the driver, RDMA or not; listed because the Network Operator installs it for RDMA.
- dranet (kubernetes-sigs/dranet) ships no class; its examples' classes are judged by CEL.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Self

from pydantic import Field, field_validator, model_validator

from webhook.dra.classes import ClassKinds
from webhook.profiles.base import ProfileModel

NVIDIA_GPU_CLASS = "gpu.nvidia.com"
SRIOV_CLASS = "sriovnetwork.k8snetworkplumbingwg.io"
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
    gpu_classes: tuple[str, ...] = (NVIDIA_GPU_CLASS,)
    """DeviceClasses whose devices are GPUs, whatever their CEL says."""
    gpu_drivers: tuple[str, ...] = ()
    """DRA drivers every device of which is a GPU (a class is still judged by its CEL)."""
    nic_classes: tuple[str, ...] = (SRIOV_CLASS,)
    """DeviceClasses whose devices are RDMA NICs, whatever their CEL says."""
    nic_drivers: tuple[str, ...] = ()
    """DRA drivers every device of which is an RDMA NIC."""
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

    @cached_property
    def class_kinds(self) -> ClassKinds:
        """The judge of classes not listed by name, its verdicts kept while the profile is."""
        return ClassKinds(self.gpu_drivers, self.nic_drivers)
