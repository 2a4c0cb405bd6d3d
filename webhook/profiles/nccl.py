"""The NCCL settings a profile writes into the selected containers' environment."""

from __future__ import annotations

import re
from typing import Self

from pydantic import Field, field_validator, model_validator

from webhook.profiles.base import ProfileModel

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_HCA = re.compile(r"^[A-Za-z0-9_.-]+(:[0-9]+)?$")
# Variables the webhook writes itself from the profile's fields; extraEnv may not repeat them.
GENERATED_ENV = frozenset(
    {
        "NCCL_IB_DISABLE",
        "NCCL_NET",
        "NCCL_SOCKET_IFNAME",
        "NCCL_IB_HCA",
        "NCCL_IB_GID_INDEX",
        "NCCL_IB_ROCE_VERSION_NUM",
        "NCCL_IB_ADDR_FAMILY",
        "NCCL_IB_ADDR_RANGE",
        "NCCL_CONF_FILE",
    }
)


def _check_hcas(value: tuple[str, ...]) -> tuple[str, ...]:
    for hca in value:
        if not _HCA.match(hca):
            raise ValueError(
                f"{hca!r} is not an HCA name; list bare names like mlx5_0 or mlx5_0:1 "
                "(kube-rdma adds the exact-match '=' or '^=' itself)"
            )
    return value


class Nccl(ProfileModel):
    socket_ifname: str | None = None
    """NCCL_SOCKET_IFNAME for NCCL's bootstrap and socket fallback (pod network pods)."""
    ib_hca: tuple[str, ...] = ()
    """HCAs (`mlx5_0` or `mlx5_0:1`) written as an exact-match NCCL_IB_HCA (`=a,b`)."""
    ib_hca_exclude: tuple[str, ...] = ()
    """HCAs NCCL must not use, written as an exact exclusion NCCL_IB_HCA (`^=a,b`)."""
    require_ib: bool = False
    """NCCL_NET=IB: NCCL fails when it cannot use RDMA instead of falling back to sockets."""
    extra_env: dict[str, str] = Field(default_factory=dict)

    _check_hca = field_validator("ib_hca", "ib_hca_exclude")(_check_hcas)

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

    @model_validator(mode="after")
    def _one_hca_form(self) -> Self:
        if self.ib_hca and self.ib_hca_exclude:
            raise ValueError(
                "set either ibHca (the devices to use) or ibHcaExclude (the devices to leave "
                "out), not both: NCCL_IB_HCA holds only one of the two"
            )
        return self
