"""The cluster generator's CPU pods (DaemonSets, Deployments) and its objects in full, as a watch
delivers them: valid, deterministic, and leaving the nodes and training pods as they were."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import kubernetes_validate
import pytest

from kube_rdma.core.objects import Json
from testbed.clustergen import ClusterSpec, generate
from testbed.clustergen.served import fields_v1

SPEC = ClusterSpec(nodes=40, seed=4, daemon_pods_per_node=3, cpu_pods=25)


def owners(objects: list[Json]) -> Counter[str]:
    return Counter(
        o["metadata"]["ownerReferences"][0]["kind"] for o in objects if o["kind"] == "Pod"
    )


def test_cpu_pods_beside_the_training_pods() -> None:
    plain = generate(ClusterSpec(nodes=40, seed=4))
    objects = generate(SPEC)
    assert objects[: len(plain)] == plain  # nodes and training pods unchanged
    extra = objects[len(plain) :]
    assert owners(extra) == {"DaemonSet": 120, "ReplicaSet": 25}
    daemons = Counter((p["spec"]["nodeName"], p["metadata"]["namespace"]) for p in extra[:120])
    assert len({node for node, _ in daemons}) == 40
    assert len({p["metadata"]["name"] for p in extra}) == len(extra)
    assert all(p["status"]["phase"] == "Running" for p in extra)


def test_full_objects_are_deterministic_and_valid() -> None:
    full = generate(replace(SPEC, served=True))
    assert full == generate(replace(SPEC, served=True))
    pods = [o for o in full if o["kind"] == "Pod"]
    for obj in [*full[:3], *pods[:40], *pods[-30:]]:
        kubernetes_validate.validate(obj, "1.33", strict=True)
    assert all(o["metadata"]["managedFields"] for o in full)
    assert {len(p["status"].get("conditions", ())) for p in pods} == {1, 5}  # pending, bound


def test_full_objects_keep_what_was_generated() -> None:
    plain, full = generate(SPEC), generate(replace(SPEC, served=True))
    for before, after in zip(plain, full, strict=True):
        assert after["metadata"]["name"] == before["metadata"]["name"]
        assert after["metadata"]["labels"] == before["metadata"]["labels"]
        if after["kind"] == "Pod":
            assert after["status"]["phase"] == before["status"]["phase"]
            resources = [c["resources"] for c in after["spec"]["containers"]]
            assert resources == [c["resources"] for c in before["spec"]["containers"]]


@pytest.mark.parametrize(
    ("value", "fields"),
    [
        ("x", {}),
        ({"a": 1, "b": {"c": [1, 2]}}, {".": {}, "f:a": {}, "f:b": {".": {}, "f:c": {}}}),
        (
            [{"name": "m", "image": "i"}],
            {'k:{"name":"m"}': {".": {}, "f:name": {}, "f:image": {}}},
        ),
    ],
)
def test_fields_v1(value: object, fields: Json) -> None:
    assert fields_v1(value) == fields
