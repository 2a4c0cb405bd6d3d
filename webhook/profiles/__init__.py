"""RDMA profiles: what the webhook adds to a pod, as admins describe it in YAML.

A profile file (mounted from a ConfigMap) holds named profiles and names the default one.
Every field has a named default, so `profiles: {default: {}}` is the built-in profile that
makes a typical single-NIC training pod RDMA-ready. Validation rejects combinations known to
fail in production (a fixed GID index under macvlan, the node's GID under macvlan or SR-IOV, a
plugin device mode with no resource to trigger the plugin) with a message that says what to
change. One module per part of a profile; this package exports them all.
"""

from webhook.profiles.dra import DEFAULT_CLAIM_NAME, Dra
from webhook.profiles.gid import DEFAULT_RESOLVER_IMAGE, ConfPath, Gid, GidStrategy, OnMissing
from webhook.profiles.loader import (
    BUILTIN,
    DEFAULT_PROFILE,
    ProfileError,
    ProfileSet,
    load_profiles,
    parse_profiles,
)
from webhook.profiles.nccl import GENERATED_ENV, Nccl
from webhook.profiles.network import ExistingNetworks, Network, NetworkMode
from webhook.profiles.profile import ConflictAction, DeviceMode, Profile
from webhook.profiles.resources import DEFAULT_RDMA_RESOURCE, Resources
from webhook.profiles.scheduling import Scheduling
from webhook.profiles.shm import Shm

__all__ = [
    "BUILTIN",
    "DEFAULT_CLAIM_NAME",
    "DEFAULT_PROFILE",
    "DEFAULT_RDMA_RESOURCE",
    "DEFAULT_RESOLVER_IMAGE",
    "GENERATED_ENV",
    "ConfPath",
    "ConflictAction",
    "DeviceMode",
    "Dra",
    "ExistingNetworks",
    "Gid",
    "GidStrategy",
    "Nccl",
    "Network",
    "NetworkMode",
    "OnMissing",
    "Profile",
    "ProfileError",
    "ProfileSet",
    "Resources",
    "Scheduling",
    "Shm",
    "load_profiles",
    "parse_profiles",
]
