"""The running webhook picks up a changed profile file and keeps the last good one."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from testbed.builders import pods
from tests.conftest import Serve, WebhookClient
from webhook.app import Settings


async def outcome(client: WebhookClient, profile: str) -> str:
    pod = pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/profile": profile})
    response = await client.review(pods.request(pod))
    return "patched" if "patch" in response else response["status"]["message"]


async def wait_for(client: WebhookClient, text: str) -> str:
    for _ in range(200):
        _, body = await client.get("/metrics")
        if text in body.splitlines():
            return body
        await asyncio.sleep(0.01)
    raise AssertionError(f"{text!r} never appeared in /metrics")


async def test_profiles_file_is_reloaded_live(serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text("profiles: {default: {}}")
    async with serve(Settings(profiles_file=path, reload_interval=0.01)) as client:
        assert await outcome(client, "rails8") == (
            "RDMA profile 'rails8' (annotation kube-rdma.io/profile) does not exist; valid "
            "profiles: default"
        )
        path.write_text(pods.PROFILES_YAML)
        await wait_for(client, 'kube_rdma_profile_reloads_total{result="loaded"} 1.0')
        assert await outcome(client, "rails8") == "patched"

        path.write_text("profiles: {default: {shm: {size: huge}}}")
        await wait_for(client, 'kube_rdma_profile_reloads_total{result="rejected"} 1.0')
        assert await outcome(client, "rails8") == "patched"


SRIOV_FIXED = """
profiles:
  default: {}
  sriov-fixed:
    network: {mode: sriov, networks: [sriov-rdma]}
    resources: {fixed: {nvidia.com/sriov_rdma_vf: 1}}
    gid: {strategy: fixed, index: 3}
"""


async def test_load_time_warnings_are_logged_and_counted(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(SRIOV_FIXED)
    with caplog.at_level(logging.WARNING, logger="kube_rdma.webhook"):
        async with serve(Settings(profiles_file=path, reload_interval=0.01)) as client:
            await wait_for(client, 'kube_rdma_profile_warnings{profile="sriov-fixed"} 1.0')
            path.write_text("profiles: {default: {}}")
            body = await wait_for(client, 'kube_rdma_profile_reloads_total{result="loaded"} 1.0')
            assert "kube_rdma_profile_warnings{" not in body
    warnings = [r.getMessage() for r in caplog.records if r.name == "kube_rdma.webhook"]
    assert warnings == [
        f"{path}: profile sriov-fixed: gid.strategy fixed with network.mode sriov: a VF in its "
        "own network namespace usually has its IPv4 RoCE v2 GID at index 3, but not on every NIC "
        "and firmware; strategy pod reads each pod's own GID table"
    ]
