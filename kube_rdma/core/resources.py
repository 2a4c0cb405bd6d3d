"""Which extended resources count as RDMA, for the webhook and the extender alike.

A pod that already asks for an RDMA device must not get a second one from the webhook, and the
extender must count the same requests against a node's RDMA capacity; both read this one
definition. Device plugins name RDMA resources in many ways: the RDMA shared device plugin
(`rdma/hca_shared_devices_a`, `rdma/rdma_shared_device_a`), SR-IOV VFs with RDMA
(`nvidia.com/sriov_rdma_vf`, `rdma.nvidia.com/hca`), Spiderpool (`spidernet.io/hca_shared_devices`)
and the NVIDIA Network Operator's example names (`nvidia.com/hostdev`, `nvidia.com/mlnxics`,
`nvidia.com/sriov_resource`), with `nvidia.com/mlnxnics`, the SR-IOV VF pool name most clusters
use (Azure ND H100 v5 among them). Plain SR-IOV netdevice pools (`intel.com/sriov_netdevice`,
`nvidia.com/sriov_net`) carry no RDMA device and stay out.

A pattern is a full resource name in which `*` stands for any run of characters, `/` included.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable

DEFAULT_RDMA_PATTERNS: tuple[str, ...] = (
    "*rdma*",
    "*/hca*",
    "nvidia.com/hostdev",
    "nvidia.com/mlnxics",
    "nvidia.com/mlnxnics",
    "nvidia.com/sriov_resource",
)

_PATTERN = re.compile(r"^[A-Za-z0-9_.*/-]+$")
_NAME = re.compile(r"^[A-Za-z0-9.-]+/[A-Za-z0-9_.-]+$")


def pattern_error(pattern: str) -> str | None:
    """Why `pattern` cannot name extended resources, or None when it can."""
    if not _PATTERN.match(pattern) or pattern.count("/") > 1:
        return (
            f"{pattern!r} is not a resource pattern (domain/name, letters, digits, '-', '_', "
            "'.', with '*' as a wildcard)"
        )
    if "*" not in pattern and not _NAME.match(pattern):
        return f"{pattern!r} is not an extended resource name (domain/name)"
    return None


def is_rdma(resource: str, patterns: Iterable[str] = DEFAULT_RDMA_PATTERNS) -> bool:
    """True when `resource`, an extended resource (domain/name), matches one of `patterns`;
    cpu, memory and the other resources without a domain never count."""
    return "/" in resource and _matches(resource, tuple(patterns))


@functools.lru_cache(maxsize=4096)
def _matches(resource: str, patterns: tuple[str, ...]) -> bool:
    """Remembered: a cluster has a handful of resource names, asked about for every pod."""
    return any(fnmatch.fnmatchcase(resource, p) for p in patterns)
