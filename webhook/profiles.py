"""RDMA profiles: what the webhook adds to a pod, as admins describe it in YAML.

A profile file (mounted from a ConfigMap) holds named profiles and names the default one.
Every field has a named default, so `profiles: {default: {}}` is the built-in profile that
makes a typical single-NIC training pod RDMA-ready. Validation rejects combinations known to
fail in production (a fixed GID index under macvlan, a plugin device mode with no resource to
trigger the plugin) with a message that says what to change.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, Self

import orjson
import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from kube_rdma.core.config_file import ConfigError, read_text
from kube_rdma.core.quantity import QuantityError, parse_bytes

DEFAULT_PROFILE = "default"
DEFAULT_RDMA_RESOURCE = "rdma/hca"

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_HCA = re.compile(r"^[A-Za-z0-9_.-]+(:[0-9]+)?$")
_NETWORK = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?(@[\w.-]+)?$"
)
_PROFILE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_MIB = 1 << 20
# Variables the webhook writes itself from the profile's fields; extraEnv may not repeat them.
GENERATED_ENV = frozenset(
    {
        "NCCL_IB_DISABLE",
        "NCCL_SOCKET_IFNAME",
        "NCCL_IB_HCA",
        "NCCL_IB_GID_INDEX",
        "NCCL_IB_ROCE_VERSION_NUM",
        "NCCL_IB_ADDR_FAMILY",
        "NCCL_IB_ADDR_RANGE",
    }
)
_RESOURCE = re.compile(r"^[A-Za-z0-9.-]+/[A-Za-z0-9_.*-]+$")


def _to_bytes(value: Any) -> int:
    try:
        return parse_bytes(value)
    except QuantityError as e:
        raise ValueError(str(e)) from e


Bytes = Annotated[int, BeforeValidator(_to_bytes)]


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class NetworkMode(StrEnum):
    """How the pod reaches the RDMA fabric."""

    HOST = "host"  # RoCE on the host's interfaces; optionally hostNetwork
    MACVLAN = "macvlan"  # RoCE through Multus macvlan interfaces, one per rail
    SRIOV = "sriov"  # SR-IOV virtual functions through Multus
    IB = "ib"  # InfiniBand: no network namespace plumbing needed


class DeviceMode(StrEnum):
    """Where the container's /dev/infiniband comes from."""

    HOST_PATH = "hostPath"  # mount the host's /dev/infiniband
    PLUGIN = "plugin"  # the RDMA device plugin injects the devices for the resource


class GidStrategy(StrEnum):
    """How NCCL picks the RoCE GID index."""

    AUTO = "auto"  # NCCL >= 2.21 selects by RoCE version, family and address range
    FIXED = "fixed"  # one index for every pod (right for hostNetwork, wrong for macvlan)
    NODE = "node"  # the index the extender writes on the pod at bind time


class ConflictAction(StrEnum):
    """What to do when the namespace's Pod Security level forbids something the profile adds."""

    DENY = "deny"
    SKIP = "skip"


class Network(_Model):
    mode: NetworkMode = NetworkMode.IB
    host_network: bool = False
    """Run the pod in the host's network namespace (mode `host` only)."""
    networks: tuple[str, ...] = ()
    """Multus networks, one per rail, as `namespace/name` or `name`."""
    per_gpu: bool = False
    """Attach only as many of `networks` as the pod's largest GPU request."""

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
        if self.mode in (NetworkMode.MACVLAN, NetworkMode.SRIOV) and not self.networks:
            raise ValueError(
                f"mode {self.mode.value} needs the Multus networks of the rails in `networks`"
            )
        return self


class Resources(_Model):
    fixed: dict[str, int] | None = None
    """Resources added as-is, e.g. {rdma/hca: 1}. The default when perRail is unset."""
    per_rail: tuple[str, ...] | None = None
    """One resource per rail, in rail order; a container with g GPUs gets the first g."""
    rdma_resources: tuple[str, ...] = ("rdma/*",)
    """Patterns (`*` wildcard) of resources that count as RDMA: a container already asking for
    one of them is left as it is."""

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if self.fixed is not None and self.per_rail is not None:
            raise ValueError("set either fixed or perRail, not both")
        if self.fixed is None and self.per_rail is None:
            object.__setattr__(self, "fixed", {DEFAULT_RDMA_RESOURCE: 1})
        for name in [*(self.fixed or {}), *(self.per_rail or ()), *self.rdma_resources]:
            if not _RESOURCE.match(name):
                raise ValueError(f"{name!r} is not an extended resource name (domain/name)")
        for name in [*(self.fixed or {}), *(self.per_rail or ())]:
            if "*" in name:
                raise ValueError(
                    f"{name!r}: patterns belong in rdmaResources, not fixed or perRail"
                )
        if self.per_rail is not None and not self.per_rail:
            raise ValueError("perRail must list at least one resource")
        if self.per_rail and len(set(self.per_rail)) != len(self.per_rail):
            raise ValueError("perRail lists the same resource twice")
        for name, count in (self.fixed or {}).items():
            if count < 1:
                raise ValueError(f"fixed[{name}] must be at least 1, not {count}")
        return self

    def names(self) -> tuple[str, ...]:
        return tuple(self.fixed or ()) + tuple(self.per_rail or ())


class Shm(_Model):
    enabled: bool = True
    size: Bytes | None = None
    """A fixed sizeLimit; when unset the size follows the container's memory limit."""
    memory_fraction: float = Field(default=0.5, gt=0, le=1)
    """sizeLimit as a fraction of the container's memory limit (tmpfs pages count against it)."""
    min: Bytes = 1 << 30
    max: Bytes = 256 << 30
    fallback: Bytes = 16 << 30
    """sizeLimit when no selected container sets a memory limit."""

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min > self.max:
            raise ValueError("shm.min is larger than shm.max")
        for name in ("size", "min", "max", "fallback"):
            value = getattr(self, name)
            if value is not None and value < _MIB:
                raise ValueError(f"shm.{name} must be at least 1Mi (a zero sizeLimit means none)")
        return self


class Nccl(_Model):
    socket_ifname: str | None = None
    """NCCL_SOCKET_IFNAME for NCCL's bootstrap and socket fallback."""
    ib_hca: tuple[str, ...] = ()
    """HCAs (`mlx5_0` or `mlx5_0:1`) written as an exact-match NCCL_IB_HCA."""
    extra_env: dict[str, str] = {}

    @field_validator("ib_hca")
    @classmethod
    def _check_hca(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for hca in value:
            if not _HCA.match(hca):
                raise ValueError(
                    f"{hca!r} is not an HCA name; list bare names like mlx5_0 or mlx5_0:1 "
                    "(kube-rdma adds the exact-match '=' itself)"
                )
        return value

    @field_validator("extra_env")
    @classmethod
    def _check_env(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if name in GENERATED_ENV:
                raise ValueError(
                    f"{name} is set from the profile's own fields (nccl, gid); set it there, "
                    "not in extraEnv"
                )
        return value


class Gid(_Model):
    strategy: GidStrategy = GidStrategy.AUTO
    index: int | None = Field(default=None, ge=0, le=255)
    """NCCL_IB_GID_INDEX for strategy `fixed`."""
    addr_family: Literal["AF_INET", "AF_INET6"] = "AF_INET"
    addr_range: str | None = None
    """The rail subnet (CIDR) for strategy `auto`: NCCL only picks GIDs inside it."""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.strategy is GidStrategy.FIXED and self.index is None:
            raise ValueError("strategy fixed needs index (the host's RoCE v2 GID index, often 3)")
        if self.strategy is not GidStrategy.FIXED and self.index is not None:
            raise ValueError(f"index is only used with strategy fixed, not {self.strategy.value}")
        if self.addr_range is not None:
            if self.strategy is not GidStrategy.AUTO:
                raise ValueError("addrRange is only used with strategy auto")
            try:
                net = ipaddress.ip_network(self.addr_range, strict=False)
            except ValueError as e:
                raise ValueError(f"addrRange {self.addr_range!r} is not a CIDR: {e}") from e
            family = "AF_INET" if net.version == 4 else "AF_INET6"
            if family != self.addr_family:
                raise ValueError(f"addrRange {self.addr_range} is not an {self.addr_family} range")
        return self


class Profile(_Model):
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
    pod_security_conflict: ConflictAction = ConflictAction.DENY

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.network.mode is NetworkMode.MACVLAN and self.gid.strategy is GidStrategy.FIXED:
            raise ValueError(
                "gid.strategy fixed with network.mode macvlan: under macvlan each pod gets its "
                "own GID indexes, so one fixed index is wrong for most pods; use strategy auto "
                "with addrRange set to the rail subnet"
            )
        if self.gid.strategy is GidStrategy.NODE and self.nccl.ib_hca:
            raise ValueError(
                "gid.strategy node also sets NCCL_IB_HCA from the node; remove nccl.ibHca "
                "or use strategy auto or fixed"
            )
        if self.devices is DeviceMode.PLUGIN and not self.resources.names():
            raise ValueError(
                "devices: plugin relies on an RDMA resource to make the device plugin inject "
                "/dev/infiniband; set resources.fixed or resources.perRail, or use hostPath"
            )
        if not self.gpu_resources:
            raise ValueError("gpuResources must name at least one GPU resource")
        return self

    @cached_property
    def digest(self) -> str:
        """A short stable hash of the profile's full effective content."""
        body = orjson.dumps(
            self.model_dump(mode="json", by_alias=True), option=orjson.OPT_SORT_KEYS
        )
        return hashlib.sha256(body).hexdigest()[:12]


class ProfileSet(_Model):
    default_profile: str = DEFAULT_PROFILE
    profiles: dict[str, Profile]

    @model_validator(mode="after")
    def _check(self) -> Self:
        for name in self.profiles:
            if not _PROFILE_NAME.match(name):
                raise ValueError(f"profile name {name!r} must be lowercase letters, digits, - or .")
        if self.default_profile not in self.profiles:
            raise ValueError(
                f"defaultProfile {self.default_profile!r} is not one of the profiles "
                f"({', '.join(sorted(self.profiles)) or 'none'}); add it or change defaultProfile"
            )
        return self

    @property
    def default(self) -> Profile:
        return self.profiles[self.default_profile]


BUILTIN = ProfileSet(profiles={DEFAULT_PROFILE: Profile()})


class ProfileError(ConfigError):
    """A profile file that cannot be used; the message says where and why."""


def parse_profiles(text: str, source: str) -> ProfileSet:
    """Parse and validate a profile file's text; `source` names it in error messages."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ProfileError(f"{source}: not valid YAML: {e}") from e
    except RecursionError as e:
        raise ProfileError(f"{source}: not valid YAML: nested too deeply") from e
    if not isinstance(data, dict):
        raise ProfileError(
            f"{source}: expected a mapping with `profiles:`, got {type(data).__name__}"
        )
    try:
        return ProfileSet.model_validate(data)
    except ValidationError as e:
        raise ProfileError(f"{source}: {_describe(e)}") from e


def load_profiles(path: Path) -> ProfileSet:
    return parse_profiles(read_text(path), str(path))


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)
