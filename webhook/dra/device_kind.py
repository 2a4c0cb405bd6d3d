"""The two kinds of device the webhook tells apart in a pod's claims."""

from __future__ import annotations

from enum import StrEnum


class DeviceKind(StrEnum):
    GPU = "GPU"
    NIC = "RDMA NIC"
