"""Profile files: the built-in default, validation messages an admin can act on, and reload."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kube_rdma.core.config_file import ConfigError
from webhook.profile_store import ProfileStore
from webhook.profiles import (
    BUILTIN,
    DeviceMode,
    GidStrategy,
    NetworkMode,
    ProfileError,
    load_profiles,
    parse_profiles,
)


def test_builtin_default_makes_a_typical_pod_rdma_ready() -> None:
    profile = BUILTIN.default
    assert BUILTIN.default_profile == "default"
    assert profile.resources.fixed == {"rdma/hca": 1}
    assert profile.devices is DeviceMode.HOST_PATH
    assert profile.ipc_lock is True
    assert profile.shm.enabled is True
    assert profile.gid.strategy is GidStrategy.AUTO
    assert profile.network.mode is NetworkMode.IB


def test_empty_profile_equals_builtin_default() -> None:
    assert parse_profiles("profiles: {default: {}}", "f").default == BUILTIN.default
    assert parse_profiles("profiles: {default: {}}", "f").default.digest == BUILTIN.default.digest


def test_digest_changes_with_content() -> None:
    other = parse_profiles("profiles: {default: {ipcLock: false}}", "f").default
    assert other.digest != BUILTIN.default.digest
    assert len(other.digest) == 12


def test_quantities_are_parsed() -> None:
    text = "profiles: {default: {shm: {size: 64Gi, min: 512Mi, max: 1Ti, fallback: 8G}}}"
    shm = parse_profiles(text, "f").default.shm
    assert (shm.size, shm.min, shm.max, shm.fallback) == (64 << 30, 512 << 20, 1 << 40, 8 * 10**9)


INVALID = [
    ("not-yaml", "profiles: [", "f.yaml: not valid YAML: "),
    ("not-a-mapping", "- a", "f.yaml: expected a mapping with `profiles:`, got list"),
    ("no-profiles", "{}", "f.yaml: profiles: Field required"),
    (
        "default-missing",
        "profiles: {rails: {}}",
        "f.yaml: defaultProfile 'default' is not one of the profiles (rails); add it or change "
        "defaultProfile",
    ),
    (
        "unknown-field",
        "profiles: {default: {ipclock: true}}",
        "f.yaml: profiles.default.ipclock: Extra inputs are not permitted",
    ),
    (
        "macvlan-fixed-gid",
        "profiles: {default: {network: {mode: macvlan, networks: [r1]},"
        " gid: {strategy: fixed, index: 3}}}",
        "f.yaml: profiles.default: gid.strategy fixed with network.mode macvlan: under macvlan "
        "each pod gets its own GID indexes, so one fixed index is wrong for most pods; use "
        "strategy auto with addrRange set to the rail subnet",
    ),
    (
        "fixed-without-index",
        "profiles: {default: {gid: {strategy: fixed}}}",
        "f.yaml: profiles.default.gid: strategy fixed needs index (the host's RoCE v2 GID index, "
        "often 3)",
    ),
    (
        "range-wrong-family",
        "profiles: {default: {gid: {addrRange: 'fd00::/64'}}}",
        "f.yaml: profiles.default.gid: addrRange fd00::/64 is not an AF_INET range",
    ),
    (
        "range-not-cidr",
        "profiles: {default: {gid: {addrRange: 10.0.0.0/33}}}",
        "f.yaml: profiles.default.gid: addrRange '10.0.0.0/33' is not a CIDR: '10.0.0.0/33' "
        "does not appear to be an IPv4 or IPv6 network",
    ),
    (
        "host-network-needs-host-mode",
        "profiles: {default: {network: {hostNetwork: true}}}",
        "f.yaml: profiles.default.network: hostNetwork: true needs mode: host, not ib",
    ),
    (
        "macvlan-needs-networks",
        "profiles: {default: {network: {mode: macvlan}}}",
        "f.yaml: profiles.default.network: mode macvlan needs the Multus networks of the rails "
        "in `networks`",
    ),
    (
        "plugin-needs-resource",
        "profiles: {default: {devices: plugin, resources: {fixed: {}}}}",
        "f.yaml: profiles.default: devices: plugin relies on an RDMA resource to make the device "
        "plugin inject /dev/infiniband; set resources.fixed or resources.perRail, or use hostPath",
    ),
    (
        "both-resource-forms",
        "profiles: {default: {resources: {fixed: {rdma/hca: 1}, perRail: [rdma/hca1]}}}",
        "f.yaml: profiles.default.resources: set either fixed or perRail, not both",
    ),
    (
        "hca-with-prefix",
        "profiles: {default: {nccl: {ibHca: ['=mlx5_0']}}}",
        "f.yaml: profiles.default.nccl.ibHca: '=mlx5_0' is not an HCA name; list bare names like "
        "mlx5_0 or mlx5_0:1 (kube-rdma adds the exact-match '=' itself)",
    ),
    (
        "node-with-hca",
        "profiles: {default: {gid: {strategy: node}, nccl: {ibHca: [mlx5_0]}}}",
        "f.yaml: profiles.default: gid.strategy node also sets NCCL_IB_HCA from the node; remove "
        "nccl.ibHca or use strategy auto or fixed",
    ),
    (
        "bad-quantity",
        "profiles: {default: {shm: {size: lots}}}",
        "f.yaml: profiles.default.shm.size: 'lots' is not a Kubernetes quantity (expected e.g. "
        "16Gi, 512Mi, 1G or 8)",
    ),
    (
        "min-above-max",
        "profiles: {default: {shm: {min: 8Gi, max: 4Gi}}}",
        "f.yaml: profiles.default.shm: shm.min is larger than shm.max",
    ),
    (
        "bad-env-name",
        "profiles: {default: {nccl: {extraEnv: {'NCCL DEBUG': INFO}}}}",
        "f.yaml: profiles.default.nccl.extraEnv: 'NCCL DEBUG' is not a valid environment "
        "variable name",
    ),
    (
        "bad-network-ref",
        "profiles: {default: {network: {mode: sriov, networks: ['Rail 1']}}}",
        "f.yaml: profiles.default.network.networks: 'Rail 1' is not a Multus network reference "
        "(namespace/name)",
    ),
    (
        "extra-env-collides",
        "profiles: {default: {nccl: {extraEnv: {NCCL_IB_DISABLE: '1'}}}}",
        "f.yaml: profiles.default.nccl.extraEnv: NCCL_IB_DISABLE is set from the profile's own "
        "fields (nccl, gid); set it there, not in extraEnv",
    ),
    (
        "per-rail-empty",
        "profiles: {default: {resources: {perRail: []}}}",
        "f.yaml: profiles.default.resources: perRail must list at least one resource",
    ),
    (
        "per-rail-duplicate",
        "profiles: {default: {resources: {perRail: [rdma/hca1, rdma/hca1]}}}",
        "f.yaml: profiles.default.resources: perRail lists the same resource twice",
    ),
    (
        "fixed-pattern",
        "profiles: {default: {resources: {fixed: {'rdma/*': 1}}}}",
        "f.yaml: profiles.default.resources: 'rdma/*': patterns belong in rdmaResources, not "
        "fixed or perRail",
    ),
    (
        "shm-zero",
        "profiles: {default: {shm: {size: 0}}}",
        "f.yaml: profiles.default.shm: shm.size must be at least 1Mi (a zero sizeLimit means none)",
    ),
    (
        "deeply-nested",
        "[" * 5000,
        "f.yaml: not valid YAML: ",
    ),
    (
        "bad-profile-name",
        "defaultProfile: Default\nprofiles: {Default: {}}",
        "f.yaml: profile name 'Default' must be lowercase letters, digits, - or .",
    ),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_profiles_are_explained(text: str, message: str) -> None:
    with pytest.raises(ProfileError) as error:
        parse_profiles(text, "f.yaml")
    if message.endswith(": "):
        assert str(error.value).startswith(message)
    else:
        assert str(error.value) == message


def test_missing_file_is_explained(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing.yaml: cannot read: No such file or directory"):
        load_profiles(tmp_path / "missing.yaml")


def test_reload_takes_new_profiles_and_keeps_last_good_on_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text("profiles: {default: {}}")
    results: list[str] = []
    store = ProfileStore(path, results.append)
    assert store.check() is False

    path.write_text("profiles: {default: {}, rails: {ipcLock: false}}")
    assert store.check() is True
    assert sorted(store.current.profiles) == ["default", "rails"]

    path.write_text("profiles: {default: {ipcLock: maybe}}")
    with caplog.at_level(logging.ERROR):
        assert store.check() is False
        assert store.check() is False  # the same bad file is reported once
    assert sorted(store.current.profiles) == ["default", "rails"]
    assert store.last_error is not None
    assert "profiles.default.ipcLock: Input should be a valid boolean" in store.last_error
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage().split(":")[0] for r in errors] == [
        "profiles reload rejected, keeping the last good profiles"
    ]

    path.unlink()
    assert store.check() is False
    assert sorted(store.current.profiles) == ["default", "rails"]

    path.write_text("profiles: {default: {}}")
    assert store.check() is True
    assert store.last_error is None
    assert results == ["loaded", "rejected", "rejected", "loaded"]


def test_invalid_file_at_start_up_raises(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text("profiles: {}")
    with pytest.raises(ProfileError, match="defaultProfile 'default' is not one of the profiles"):
        ProfileStore(path)


def test_non_utf8_file_is_explained(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_bytes(b"profiles: {default: {}}\n# \xff")
    with pytest.raises(ConfigError, match=r"profiles.yaml: not UTF-8 text \(byte 26\)"):
        load_profiles(path)
