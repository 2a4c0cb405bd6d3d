"""Profile files: the built-in default, validation messages an admin can act on, and reload."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kube_rdma.core.config_file import ConfigError
from kube_rdma.core.resources import DEFAULT_RDMA_PATTERNS
from webhook.profile_store import ProfileStore
from webhook.profiles import (
    BUILTIN,
    ConfPath,
    DeviceMode,
    ExistingNetworks,
    GidStrategy,
    NetworkMode,
    OnMissing,
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
    assert parse_profiles("profiles: {default: {}}", "f").default.digest == "ffbf4b31ccba"
    assert BUILTIN.default.digest == "ffbf4b31ccba"


def test_digest_changes_with_content() -> None:
    other = parse_profiles("profiles: {default: {ipcLock: false}}", "f").default
    assert other.digest == "15f3cdd2a82f"


def test_quantities_are_parsed() -> None:
    text = "profiles: {default: {shm: {size: 64Gi, min: 512Mi, max: 1Ti, fallback: 8G}}}"
    shm = parse_profiles(text, "f").default.shm
    assert (shm.size, shm.min, shm.max, shm.fallback) == (64 << 30, 512 << 20, 1 << 40, 8 * 10**9)


def test_builtin_pod_strategy_defaults() -> None:
    gid = parse_profiles("profiles: {default: {gid: {strategy: pod}}}", "f").default.gid
    assert (gid.conf_path, gid.on_missing, gid.roce_version, gid.family, gid.image) == (
        ConfPath.ETC,
        OnMissing.FAIL,
        2,
        "ipv4",
        "ghcr.io/kube-rdma/kube-rdma:0.1.0",
    )
    assert BUILTIN.default.network.existing is ExistingNetworks.KEEP
    assert BUILTIN.default.resources.rdma_resources == DEFAULT_RDMA_PATTERNS


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


def test_example_profiles_load_without_warnings() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "profiles.yaml"
    profiles = load_profiles(example)
    assert sorted(profiles.profiles) == [
        "default",
        "hostnet",
        "mnnvl",
        "rails8",
        "rails8-pod",
        "sriov",
    ]
    assert profiles.load_warnings() == {}
