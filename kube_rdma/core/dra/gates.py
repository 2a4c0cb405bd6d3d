"""The DRA feature gates kube-rdma's allocation follows where they change what it does, with
their defaults per Kubernetes version (kubernetes pkg/features/kube_features.go):

| gate | 1.33-1.35 | 1.36 | 1.37 |
|---|---|---|---|
| DRADeviceTaints | alpha, off | beta, on | GA, on |
| DRADeviceTaintRules (1.35; DRADeviceTaints before) | alpha, off | beta, off | GA, on |
| DRAPartitionableDevices | alpha, off | beta, on | beta, on |
| DRAConsumableCapacity (1.34) | alpha, off | beta, on | beta, on |
| DRADeviceBindingConditions (1.34) | alpha, off | beta, on | beta, on |

A cluster whose apiserver has a gate off drops the fields it guards (a device's `taints`, a
slice's `sharedCounters`, a device's `consumesCounters`, `allowMultipleAllocations` and
capacity request policies, a request's `capacity`, a device's binding conditions) and does
not serve DeviceTaintRules, so what the extender reads is what the cluster has on: it
allocates with every gate on (SERVED). Kubernetes' allocator tests name the gates each case
turns on; they run with those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Gates:
    device_taints: bool = True
    """DRADeviceTaints: a device's taints keep it from requests that do not tolerate them."""
    device_taint_rules: bool = True
    """DeviceTaintRules taint the devices they select (DRADeviceTaintRules from 1.35)."""
    partitionable_devices: bool = True
    """DRAPartitionableDevices: counter sets and the devices consuming them."""
    consumable_capacity: bool = True
    """DRAConsumableCapacity: a device that allows multiple allocations is shared, each
    result consuming part of its capacity (kube_rdma/core/dra/capacity.py)."""
    binding_conditions: bool = True
    """DRADeviceBindingConditions (with DRAResourceClaimDeviceStatus): a device's binding
    conditions go into its result (kube_rdma/core/dra/binding.py); off, such a device is
    never allocated."""

    @classmethod
    def defaults(cls, minor: int) -> Gates:
        """The defaults of Kubernetes 1.<minor>."""
        return cls(
            device_taints=minor >= 36,
            device_taint_rules=minor >= 37,
            partitionable_devices=minor >= 36,
            consumable_capacity=minor >= 36,
            binding_conditions=minor >= 36,
        )

    @classmethod
    def of(cls, minor: int, features: Mapping[str, bool]) -> Gates:
        """The defaults of 1.<minor> with the allocator's named features
        (structured/internal/types.go Features: `DeviceTaints`, `PartitionableDevices`,
        `ConsumableCapacity`, `DeviceBindingAndStatus`) set as given; a DeviceTaints setting
        covers DeviceTaintRules too, as the scheduler applies rules only with taints on."""
        found = cls.defaults(minor)
        taints = features.get("DeviceTaints", found.device_taints)
        return cls(
            device_taints=taints,
            device_taint_rules=taints and features.get("DeviceTaintRules", True),
            partitionable_devices=features.get("PartitionableDevices", found.partitionable_devices),
            consumable_capacity=features.get("ConsumableCapacity", found.consumable_capacity),
            binding_conditions=features.get("DeviceBindingAndStatus", found.binding_conditions),
        )


SERVED = Gates()
"""Every gate on: what a cluster publishes is what it has enabled."""
