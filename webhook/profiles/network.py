"""How a profile connects the pod to the RDMA fabric: the network mode and Multus rails."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Self

from pydantic import field_validator, model_validator

from webhook.profiles.base import ProfileModel

_NETWORK = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?(@[\w.-]+)?$"
)


class NetworkMode(StrEnum):
    """How the pod reaches the RDMA fabric."""

    HOST = "host"  # RoCE on the host's interfaces; optionally hostNetwork
    MACVLAN = "macvlan"  # RoCE through Multus macvlan interfaces, one per rail
    SRIOV = "sriov"  # SR-IOV virtual functions through Multus
    IB = "ib"  # InfiniBand: no network namespace plumbing needed


class ExistingNetworks(StrEnum):
    """What to do with a pod that already lists Multus networks of its own."""

    KEEP = "keep"  # keep the pod's networks and add none of the rails (a warning says so)
    MERGE = "merge"  # add the rails the pod does not name yet (by namespace/name)


class Network(ProfileModel):
    mode: NetworkMode = NetworkMode.IB
    host_network: bool = False
    """Run the pod in the host's network namespace (mode `host` only)."""
    host_socket_ifname: str | None = None
    """NCCL_SOCKET_IFNAME for pods in the host's network namespace (the profile's hostNetwork
    or the pod's own), which see the host's interfaces rather than the pod network's."""
    networks: tuple[str, ...] = ()
    """Multus networks, one per rail, as `namespace/name` or `name`."""
    per_gpu: bool = False
    """Attach only as many of `networks` as the pod's largest GPU request."""
    existing: ExistingNetworks = ExistingNetworks.KEEP

    @field_validator("networks")
    @classmethod
    def _check_networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _NETWORK.match(name):
                raise ValueError(f"{name!r} is not a Multus network reference (namespace/name)")
        if len(set(value)) != len(value):
            raise ValueError("networks lists the same network twice")
        return value

    @model_validator(mode="after")
    def _check_mode(self) -> Self:
        if self.host_network and self.mode is not NetworkMode.HOST:
            raise ValueError(f"hostNetwork: true needs mode: host, not {self.mode.value}")
        if self.host_network and self.networks:
            raise ValueError(
                "hostNetwork: true with networks: Multus never wires a pod in the host's "
                "network namespace; remove networks"
            )
        if self.mode in (NetworkMode.MACVLAN, NetworkMode.SRIOV) and not self.networks:
            raise ValueError(
                f"mode {self.mode.value} needs the Multus networks of the rails in `networks`"
            )
        return self
