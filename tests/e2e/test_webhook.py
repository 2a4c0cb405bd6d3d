"""The webhook's patches as the real apiserver applies, validates and stores them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator

import pytest

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import pods
from testbed.controlplane.components import Stack
from testbed.controlplane.objects import create_namespace, delete_pods
from testbed.controlplane.rest import Rest

Shape = Callable[[str, Json], Json]
SHAPES: dict[str, Shape] = {
    "pytorchjob-master": lambda ns, a: pods.pytorchjob("master", 0, ns, a),
    "pytorchjob-worker": lambda ns, a: pods.pytorchjob("worker", 1, ns, a),
    "mpijob-worker": pods.mpijob_worker,
    "jobset": pods.jobset_pod,
    "volcano": pods.volcano_pod,
    "sidecar": pods.sidecar_pod,
}
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink")


@pytest.fixture
def injected(stack: Stack, api: Rest, namespace: str) -> Iterator[str]:
    """A namespace labelled kube-rdma.io/injection=enabled."""
    name = f"{namespace}-inj"
    create_namespace(stack, name, {keys.INJECTION: keys.INJECTION_ENABLED})
    yield name
    delete_pods(api, name)


def create(api: Rest, pod: Json) -> Json:
    stored: Json = api.post(f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", pod)
    return stored


def gpu_containers(pod: Json) -> list[Json]:
    return [c for c in pod["spec"]["containers"] if "nvidia.com/gpu" in c["resources"]["limits"]]


def assert_injected(stored: Json) -> None:
    applied = json.loads(stored["metadata"]["annotations"][keys.APPLIED])
    assert applied["profile"] == "default"
    devices = [v for v in stored["spec"]["volumes"] if "hostPath" in v]
    assert [v["hostPath"]["path"] for v in devices] == ["/dev/infiniband"]
    for container in gpu_containers(stored):
        assert container["resources"]["limits"]["rdma/hca"] == "1"
        assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert {"/dev/infiniband", "/dev/shm"} <= mounts


def recreated(pod: Json, name: str) -> Json:
    """The stored pod as a client would post it again under another name."""
    again = copy.deepcopy(pod)
    again.pop("status", None)
    for field in SERVER_FIELDS:
        again["metadata"].pop(field, None)
    again["metadata"]["name"] = name
    return again


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_opted_in_pods_are_mutated_and_stored_and_recreating_changes_nothing(
    api: Rest, injected: str, shape: str
) -> None:
    stored = create(api, SHAPES[shape](injected, {}))

    assert_injected(stored)
    again = create(api, recreated(stored, stored["metadata"]["name"] + "-again"))
    assert again["spec"] == stored["spec"]
    assert again["metadata"]["annotations"] == stored["metadata"]["annotations"]


def test_an_annotated_pod_outside_labelled_namespaces_is_mutated(api: Rest, namespace: str) -> None:
    stored = create(api, pods.pytorchjob("worker", 0, namespace, {keys.INJECT: "true"}))

    assert_injected(stored)


@pytest.mark.parametrize(
    ("where", "annotations"),
    [("injected", {keys.INJECT: "false"}), ("plain", {}), ("kube-system", {keys.INJECT: "true"})],
)
def test_pods_that_opt_out_and_kube_system_are_untouched(
    api: Rest, injected: str, namespace: str, where: str, annotations: Json
) -> None:
    target = {"injected": injected, "plain": namespace, "kube-system": "kube-system"}[where]
    sent = pods.pytorchjob("worker", 0, target, annotations)
    sent["metadata"]["name"] = f"untouched-{namespace}"
    try:
        stored = create(api, sent)
    finally:
        path = f"/api/v1/namespaces/{target}/pods/untouched-{namespace}"
        if where == "kube-system" and api.exists(path):
            api.call("DELETE", path, {"gracePeriodSeconds": 0})

    assert keys.APPLIED not in (stored["metadata"].get("annotations") or {})
    assert (
        stored["spec"]["containers"][0]["resources"] == sent["spec"]["containers"][0]["resources"]
    )
    assert "securityContext" not in stored["spec"]["containers"][0]
