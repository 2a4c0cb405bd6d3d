"""What the schema fuzz tests (tests/fuzz/) found, each as the smallest input that shows it.

Each was marked xfail(strict=True) until its product fix landed; each now passes.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
import orjson
import pytest

from extender.app import Settings, create_app
from extender.cluster.snapshot import SnapshotError, SnapshotSource
from testbed import net
from testbed.builders import nodes
from webhook.profiles import ProfileError, parse_profiles


def _snapshot(tmp_path: Path, *objects: object) -> Path:
    path = tmp_path / "cluster.json"
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
    return path


@pytest.mark.parametrize("field", ["containers", "initContainers"])
def test_a_snapshot_pod_with_a_null_container_is_a_snapshot_error(
    tmp_path: Path, field: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "team-a"},
        "spec": {"containers": [], field: [None]},
    }
    with pytest.raises(SnapshotError, match=r"cluster\.json: "):
        SnapshotSource.from_file(_snapshot(tmp_path, pod))


@pytest.mark.parametrize("status", [["Running"], "Running"])
async def test_filter_refuses_a_pod_whose_status_is_not_a_map(status: object) -> None:
    pod = nodes.pod("not-in-the-cache")
    pod["status"] = status
    source = SnapshotSource([nodes.node("gpu-1", nodes.hgx())])
    async with net.serving(create_app(Settings(), source)) as base, aiohttp.ClientSession() as s:
        body = orjson.dumps({"Pod": pod, "NodeNames": ["gpu-1"]})
        async with s.post(f"{base}/filter", data=body) as response:
            assert response.status == 400, await response.text()


@pytest.mark.parametrize(
    ("field", "value"), [("size", "{}"), ("min", "[]"), ("max", "null"), ("fallback", "{a: 1}")]
)
def test_a_profile_shm_size_that_is_no_quantity_is_a_profile_error(field: str, value: str) -> None:
    text = f"profiles:\n  default:\n    shm:\n      {field}: {value}\n"
    with pytest.raises(ProfileError, match=rf"profiles\.default\.shm\.{field}"):
        parse_profiles(text, "profiles.yaml")
