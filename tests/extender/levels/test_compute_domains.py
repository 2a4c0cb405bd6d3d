"""Which pods need multi-node NVLink: those with a claim of NVIDIA's ComputeDomain driver,
resolved through the pod's template or claim, its DeviceClass and the class's CEL. The worker
pod is the published ComputeDomain example's (NVIDIA/k8s-dra-driver-gpu
demo/specs/imex/nvbandwidth-test-job-1.yaml)."""

from __future__ import annotations

import copy

import pytest

from extender.levels.compute_domains import nvlink_claim
from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.selectors import Selectors
from kube_rdma.core.objects import Json
from tests.extender.levels.compute_domain import (
    TEMPLATE,
    channel_template,
    device_classes,
    worker_template,
)

GENERATED = "nvbandwidth-test-1-worker-0-compute-domain-channel-x7k2p"
"""The claim the ResourceClaim controller generates from the template for one worker."""


def worker(generated: bool = False) -> Json:
    pod = copy.deepcopy(worker_template())
    pod["metadata"] = {"name": "nvbandwidth-test-1-worker-0", "namespace": "team-a"}
    if generated:
        pod["status"] = {
            "resourceClaimStatuses": [
                {"name": "compute-domain-channel", "resourceClaimName": GENERATED}
            ]
        }
    return pod


def claim(name: str, spec: Json, allocated_by: str | None = None) -> Json:
    obj: Json = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": spec,
    }
    if allocated_by is not None:
        result = {"request": "channel", "driver": allocated_by, "pool": "gb-0-00", "device": "x"}
        obj["status"] = {"allocation": {"devices": {"results": [result]}}}
    return obj


def index(*objects: Json, classes: bool = True) -> DraIndex:
    found = DraIndex()
    for obj in [*(device_classes() if classes else []), *objects]:
        if obj["kind"] == "DeviceClass":
            found.upsert_class(obj)
        elif obj["kind"] == "ResourceClaimTemplate":
            found.upsert_template(obj)
        else:
            found.upsert_claim(obj)
    return found


CHANNEL_SPEC = channel_template()["spec"]["spec"]
DAEMON_SPEC = {
    "devices": {
        "requests": [
            {"name": "daemon", "exactly": {"deviceClassName": "compute-domain-daemon.nvidia.com"}}
        ]
    }
}
GPU_SPEC = {
    "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}
}
BY_SELECTOR = {
    "devices": {
        "requests": [
            {
                "name": "channel",
                "exactly": {
                    "deviceClassName": "any",
                    "selectors": [
                        {"cel": {"expression": "device.driver == 'compute-domain.nvidia.com'"}}
                    ],
                },
            }
        ]
    }
}
UNKNOWN_CLASS = {
    "devices": {"requests": [{"name": "x", "exactly": {"deviceClassName": "imex.example.com"}}]}
}
ANY_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "any"}}


def template_with(spec: Json) -> Json:
    template = channel_template()
    template["spec"]["spec"] = spec
    return template


@pytest.mark.parametrize(
    ("pod", "objects", "found"),
    [
        # The template the ComputeDomain controller made, before the claim is generated.
        (worker(), [channel_template()], f"team-a/{TEMPLATE}"),
        # Not created yet, or in another namespace: not known to need NVLink (yet).
        (worker(), [], None),
        (worker(), [channel_template("team-b")], None),
        # The claim generated from it, pending and then allocated by the driver.
        (worker(True), [claim(GENERATED, CHANNEL_SPEC)], f"team-a/{GENERATED}"),
        (
            worker(True),
            [claim(GENERATED, {}, allocated_by="compute-domain.nvidia.com")],
            f"team-a/{GENERATED}",
        ),
        # The generated claim wins over the template it was made from.
        (worker(True), [claim(GENERATED, GPU_SPEC), channel_template()], None),
        (worker(True), [claim(GENERATED, {}, allocated_by="gpu.nvidia.com")], None),
        # The daemon class is the driver's too; a GPU class is not.
        (worker(), [template_with(DAEMON_SPEC)], f"team-a/{TEMPLATE}"),
        (worker(), [template_with(GPU_SPEC)], None),
        # A class selecting every device, narrowed to the driver by the request's own CEL.
        (worker(), [ANY_CLASS, template_with(BY_SELECTOR)], f"team-a/{TEMPLATE}"),
        # A class not in the cache, and no selectors: nothing says which driver.
        (worker(), [template_with(UNKNOWN_CLASS)], None),
    ],
)
def test_a_claim_of_the_compute_domain_driver_needs_nvlink(
    pod: Json, objects: list[Json], found: str | None
) -> None:
    assert nvlink_claim(pod, index(*objects), Selectors()) == found


def test_without_its_device_class_the_channel_is_not_known() -> None:
    assert nvlink_claim(worker(), index(channel_template(), classes=False), Selectors()) is None


def test_a_pod_without_claims_needs_nothing() -> None:
    pod = {"metadata": {"name": "p", "namespace": "team-a"}, "spec": {"containers": []}}
    assert nvlink_claim(pod, index(channel_template()), Selectors()) is None


def test_a_class_that_does_not_compile_is_not_the_driver_s() -> None:
    broken = {**ANY_CLASS, "spec": {"selectors": [{"cel": {"expression": "device.driver =="}}]}}
    assert nvlink_claim(worker(), index(broken, template_with(BY_SELECTOR)), Selectors()) is None
