"""What the schema fuzz tests (tests/fuzz/) found, each as the smallest input that shows it.

Each test is marked xfail(strict=True) until its product fix lands: the mark then has to come
off, since a strict xfail that passes fails the run.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from extender.cluster.snapshot import SnapshotError, SnapshotSource


def _snapshot(tmp_path: Path, *objects: object) -> Path:
    path = tmp_path / "cluster.json"
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
    return path


@pytest.mark.xfail(
    strict=True,
    reason="extender/cluster/trim.py (trim_pod's container trim) raises TypeError on a null "
    "container; the snapshot reader should refuse it with a SnapshotError",
)
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
