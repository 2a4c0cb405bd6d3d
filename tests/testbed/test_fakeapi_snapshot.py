"""Reading a cluster snapshot for the fake apiserver: the three file shapes, kinds it does not
serve, and the Namespaces a real cluster would also have."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kube_rdma.core.objects import Json
from testbed.fakeapi import RESOURCES
from testbed.fakeapi.snapshot import implied_namespaces, read_snapshot

NODE = {"kind": "Node", "metadata": {"name": "n"}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}}
N, P = orjson.dumps(NODE).decode(), orjson.dumps(POD).decode()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("multi.yaml", f"kind: Node\nmetadata: {{name: n}}\n---\n---\n{P}\n"),
        ("bare.yaml", f"[{N}, {P}]"),
        ("list.json", f'{{"kind": "List", "items": [{N}, {P}]}}'),
        ("lists.yaml", f"kind: NodeList\nitems: [{N}]\n---\nkind: PodList\nitems: [{P}]\n"),
    ],
)
def test_the_shapes_of_a_snapshot(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    snapshot = read_snapshot(tmp_path / name, RESOURCES)
    assert snapshot.objects == [("nodes", NODE), ("pods", POD)]
    assert snapshot.skipped == {}


def test_kinds_and_versions_not_served_are_set_aside(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        "- {kind: Namespace, metadata: {name: team-a}}\n"
        "- {apiVersion: apps/v1, kind: Pod, metadata: {name: odd}}\n"
        "- {apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: {name: g}}\n"
    )
    snapshot = read_snapshot(tmp_path / "c.yaml", RESOURCES)
    assert snapshot.objects == [
        ("namespaces", {"kind": "Namespace", "metadata": {"name": "team-a"}})
    ]
    assert snapshot.skipped == {"Pod": 1, "PodGroup": 1}


def namespace(name: str) -> Json:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}}


@pytest.mark.parametrize(
    ("objects", "added"),
    [
        ([], ["default", "kube-node-lease", "kube-public", "kube-system"]),
        (
            [("pods", POD), ("nodes", NODE), ("namespaces", {"metadata": {"name": "kube-system"}})],
            ["default", "kube-node-lease", "kube-public", "team-a"],
        ),
    ],
)
def test_implied_namespaces(objects: list[tuple[str, Json]], added: list[str]) -> None:
    assert implied_namespaces(objects) == [namespace(name) for name in added]


def test_workloads_are_filed_by_group_where_their_crds_are_served(tmp_path: Path) -> None:
    from testbed.fakeapi import WORKLOAD_RESOURCES

    batch = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}
    volcano = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}}
    (tmp_path / "c.json").write_bytes(orjson.dumps([batch, volcano]))
    snapshot = read_snapshot(tmp_path / "c.json", {**RESOURCES, **WORKLOAD_RESOURCES})
    assert snapshot.objects == [("jobs.batch", batch), ("jobs.batch.volcano.sh", volcano)]
