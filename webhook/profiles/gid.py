"""How NCCL finds the RoCE GID (and, for strategy `pod`, its devices and socket interface)."""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from typing import Literal, Self

from pydantic import Field, model_validator

from webhook.profiles.base import ProfileModel

DEFAULT_RESOLVER_IMAGE = "ghcr.io/kube-rdma/kube-rdma:0.1.0"
"""The release image, as the manifests name it: the image the webhook, the agent and the
extender run. It cannot name its own digest (the code is inside the image the digest is taken
of), so the release pins it where it is written down after the push: `python3 -m
testbed.release_manifests --digest sha256:...` writes `ghcr.io/kube-rdma/kube-rdma:<version>@
sha256:...` into every container and into the profiles ConfigMap's gid.image. A profile's
gid.image other than this one loads with a warning unless it is pinned by digest."""

PINNED = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
"""An image reference pinned by digest, with or without a tag (`repo:tag@sha256:...`)."""


def pinned(image: str) -> bool:
    """Whether `image` names one image for good: a tag can be moved to another one."""
    return PINNED.fullmatch(image) is not None


class GidStrategy(StrEnum):
    """How NCCL picks the RoCE GID index."""

    AUTO = "auto"  # NCCL >= 2.21.5 selects by RoCE version, family and address range
    FIXED = "fixed"  # one index for every pod (right for hostNetwork, wrong for macvlan)
    NODE = "node"  # the index the extender writes on the pod at bind time
    POD = "pod"  # an init container reads the pod's own GID table and writes an NCCL config file


class ConfPath(StrEnum):
    """Where the training containers read the file strategy `pod` writes."""

    ETC = "etc"  # /etc/nccl.conf, which every NCCL process reads, ranks started over ssh too
    ENV = "env"  # NCCL_CONF_FILE in the container's environment, which ssh does not pass on


class OnMissing(StrEnum):
    """What the resolver does when it cannot find a device and GID for the pod's addresses."""

    FAIL = "fail"  # the init container fails: the pod shows Init:Error with the reason
    WARN = "warn"  # it writes what it found and the pod starts


class Gid(ProfileModel):
    strategy: GidStrategy = GidStrategy.AUTO
    index: int | None = Field(default=None, ge=0, le=255)
    """NCCL_IB_GID_INDEX for strategy `fixed`."""
    addr_family: Literal["AF_INET", "AF_INET6"] = "AF_INET"
    addr_range: str | None = None
    """The rail subnet (CIDR) for strategy `auto`: NCCL only picks GIDs inside it."""
    roce_version: Literal[1, 2] = 2
    """The RoCE version of the GID to use (strategies `auto` and `pod`)."""
    conf_path: ConfPath = ConfPath.ETC
    on_missing: OnMissing = OnMissing.FAIL
    image: str = Field(default=DEFAULT_RESOLVER_IMAGE, pattern=r"^\S+$")
    """The image of the `kube-rdma nccl-conf` init container (strategy `pod`)."""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.strategy is GidStrategy.FIXED and self.index is None:
            raise ValueError("strategy fixed needs index (the host's RoCE v2 GID index, often 3)")
        if self.strategy is not GidStrategy.FIXED and self.index is not None:
            raise ValueError(f"index is only used with strategy fixed, not {self.strategy.value}")
        if self.addr_range is not None:
            self._check_range(self.addr_range)
        return self

    def _check_range(self, addr_range: str) -> None:
        if self.strategy is not GidStrategy.AUTO:
            raise ValueError("addrRange is only used with strategy auto")
        try:
            net = ipaddress.ip_network(addr_range, strict=False)
        except ValueError as e:
            raise ValueError(f"addrRange {addr_range!r} is not a CIDR: {e}") from e
        family = "AF_INET" if net.version == 4 else "AF_INET6"
        if family != self.addr_family:
            raise ValueError(f"addrRange {addr_range} is not an {self.addr_family} range")

    @property
    def family(self) -> str:
        """The family as `kube-rdma nccl-conf --family` takes it."""
        return "ipv4" if self.addr_family == "AF_INET" else "ipv6"
