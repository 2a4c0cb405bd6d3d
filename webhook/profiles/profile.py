"""One profile: its parts, and the combinations of them that cannot work.

A combination known to fail is refused at load with a message saying what to use instead; one
that works only on some hardware loads with a warning (`load_warnings`), which the profile store
logs and counts.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from functools import cached_property
from typing import Self

import orjson
from pydantic import model_validator

from webhook.profiles.base import ProfileModel
from webhook.profiles.dra import Dra
from webhook.profiles.gid import DEFAULT_RESOLVER_IMAGE, Gid, GidStrategy, pinned
from webhook.profiles.nccl import Nccl
from webhook.profiles.network import Network, NetworkMode
from webhook.profiles.resources import Resources
from webhook.profiles.scheduling import Scheduling
from webhook.profiles.shm import Shm

# What a pod in its own network namespace sees instead of the host's devices and GIDs.
_OWN_VIEW = {
    NetworkMode.MACVLAN: "each macvlan pod sees its own GIDs at its own indexes",
    NetworkMode.SRIOV: "an SR-IOV pod sees its VF's device, under the VF's name, with its own GIDs",
}
_OWN_NAMESPACE = tuple(_OWN_VIEW)


class DeviceMode(StrEnum):
    """Where the container's /dev/infiniband comes from."""

    HOST_PATH = "hostPath"  # mount the host's /dev/infiniband
    PLUGIN = "plugin"  # the RDMA device plugin injects the devices for the resource


class ConflictAction(StrEnum):
    """What to do when the namespace's Pod Security level forbids something the profile adds."""

    DENY = "deny"
    SKIP = "skip"


class Profile(ProfileModel):
    network: Network = Network()
    resources: Resources = Resources()
    devices: DeviceMode = DeviceMode.HOST_PATH
    ipc_lock: bool = True
    shm: Shm = Shm()
    nccl: Nccl = Nccl()
    gid: Gid = Gid()
    gpu_resources: tuple[str, ...] = ("nvidia.com/gpu",)
    """Resource names that mark a container as a GPU container (selected by default)."""
    scheduler_name: str | None = None
    """Send opted-in pods to this scheduler (the profile that calls the extender)."""
    scheduling: Scheduling = Scheduling()
    dra: Dra = Dra()
    """Which DeviceClasses give GPUs and RDMA NICs, and the claim template to attach."""
    pod_security_conflict: ConflictAction = ConflictAction.DENY

    @model_validator(mode="after")
    def _check(self) -> Self:
        problems = (
            self._gid_problem(),
            self._nccl_problem(),
            self._device_problem(),
            self._rail_problem(),
        )
        for problem in problems:
            if problem:
                raise ValueError(problem)
        return self

    def _gid_problem(self) -> str | None:
        mode, strategy = self.network.mode, self.gid.strategy
        if mode is NetworkMode.MACVLAN and strategy is GidStrategy.FIXED:
            return (
                "gid.strategy fixed with network.mode macvlan: under macvlan each pod gets its "
                "own GID indexes, so one fixed index is wrong for most pods; use strategy pod, "
                "or auto with addrRange set to the rail subnet"
            )
        if mode in _OWN_NAMESPACE and strategy is GidStrategy.NODE:
            return (
                f"gid.strategy node with network.mode {mode.value}: the node's GID index and HCA "
                f"names are the host's, but {_OWN_VIEW[mode]}; use strategy pod, or auto with "
                "NCCL 2.21.5 or newer"
            )
        if strategy is GidStrategy.POD and self.network.host_network:
            return (
                "gid.strategy pod with network.hostNetwork: true: a pod in the host's network "
                "namespace sees the host's GID table, so there is nothing to resolve per pod; "
                "use strategy auto or fixed"
            )
        return None

    def _nccl_problem(self) -> str | None:
        nccl, strategy = self.nccl, self.gid.strategy
        hca = [
            name
            for name, on in (
                ("nccl.ibHca", nccl.ib_hca),
                ("nccl.ibHcaExclude", nccl.ib_hca_exclude),
            )
            if on
        ]
        if strategy is GidStrategy.NODE and hca:
            return (
                f"gid.strategy node also sets NCCL_IB_HCA from the node; remove {hca[0]} "
                "or use strategy auto or fixed"
            )
        written = [*hca, *(["nccl.socketIfname"] if nccl.socket_ifname else [])]
        if strategy is GidStrategy.POD and written:
            return (
                "gid.strategy pod writes NCCL_IB_HCA and NCCL_SOCKET_IFNAME from the pod's own "
                "devices and default route, and a value in the environment would override the "
                f"file; remove {' and '.join(written)}"
            )
        if self.network.host_network and nccl.socket_ifname:
            return (
                "nccl.socketIfname with network.hostNetwork: true: every pod of this profile "
                "runs in the host's network namespace; set the host's interface in "
                "network.hostSocketIfname instead"
            )
        return None

    def _device_problem(self) -> str | None:
        if self.devices is DeviceMode.PLUGIN and not self.resources.names():
            return (
                "devices: plugin relies on an RDMA resource to make the device plugin inject "
                "/dev/infiniband; set resources.fixed or resources.perRail, or use hostPath"
            )
        if not self.gpu_resources:
            return "gpuResources must name at least one GPU resource"
        return None

    def _rail_problem(self) -> str | None:
        networks, per_rail = self.network.networks, self.resources.per_rail
        if networks and per_rail and len(networks) != len(per_rail):
            return (
                f"network.networks lists {_count(len(networks), 'network')} but "
                f"resources.perRail lists {_count(len(per_rail), 'resource')}: each rail is "
                "one Multus network and one resource, in the same order; list as many of each"
            )
        return None

    @cached_property
    def load_warnings(self) -> tuple[str, ...]:
        """Combinations that load but work only on some hardware."""
        mode, strategy = self.network.mode, self.gid.strategy
        warnings = []
        if mode is NetworkMode.SRIOV and strategy is GidStrategy.FIXED:
            warnings.append(
                "gid.strategy fixed with network.mode sriov: a VF in its own network namespace "
                "usually has its IPv4 RoCE v2 GID at index 3, but not on every NIC and firmware; "
                "strategy pod reads each pod's own GID table"
            )
        if mode is NetworkMode.SRIOV and self.nccl.ib_hca:
            warnings.append(
                "nccl.ibHca with network.mode sriov: the pod sees its VF's RDMA device under the "
                "VF's own name, not the PF's; list the VFs' names, or use strategy pod, which "
                "writes the devices the pod got"
            )
        if self.dra.claim_templates and strategy is GidStrategy.NODE:
            warnings.append(
                "dra.claimTemplates with gid.strategy node: the NICs of the attached template "
                "come from a DRA driver that puts them in the pod's own network namespace "
                "(dranet, SR-IOV), where the node's GID index and HCA names do not apply; use "
                "strategy pod, or auto with NCCL 2.21.5 or newer"
            )
        if self.scheduling.require_gdr and self.scheduler_name is None:
            warnings.append(
                "scheduling.requireGdr without schedulerName: only the kube-rdma scheduler "
                "extender reads the annotation it writes, so a pod that keeps the default "
                "scheduler may land on a node without GPUDirect RDMA; set schedulerName"
            )
        # The release image unpinned is as trusted as the webhook's own pods, which run it.
        image = self.gid.image
        if strategy is GidStrategy.POD and not (pinned(image) or image == DEFAULT_RESOLVER_IMAGE):
            warnings.append(
                f"gid.image {image} is not pinned by digest: it runs as an init container in "
                "every pod of this profile, and whoever can push its tag decides what runs "
                "there; name it as image@sha256:<digest>"
            )
        placed = self.scheduling.topology_required or self.scheduling.topology_preferred
        if placed and self.scheduler_name is None:
            warnings.append(
                "scheduling.topologyRequired or topologyPreferred without schedulerName: only "
                "the kube-rdma scheduler extender reads the annotations they write; set "
                "schedulerName"
            )
        return tuple(warnings)

    @cached_property
    def digest(self) -> str:
        """A short stable hash of the profile's full effective content. A `scheduling` or `dra`
        section at its defaults is left out, so the hash of a profile that does not use it is
        what it was before the section existed."""
        defaults = {"scheduling": Scheduling(), "dra": Dra()}
        unused = {name for name, default in defaults.items() if getattr(self, name) == default}
        body = orjson.dumps(
            self.model_dump(mode="json", by_alias=True, exclude=unused or None),
            option=orjson.OPT_SORT_KEYS,
        )
        return hashlib.sha256(body).hexdigest()[:12]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
