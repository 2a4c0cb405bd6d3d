"""A ComputeDomain job as NVIDIA's GPU DRA driver publishes it: the example MPIJob's worker pod
(tests/fixtures/dra/compute-domain-nvbandwidth-job.yaml), the channel claim template the
ComputeDomain controller makes for it, and the driver's DeviceClasses."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from kube_rdma.core.objects import Json

ROOT = Path(__file__).resolve().parents[3]
DRA = ROOT / "tests" / "fixtures" / "dra"
CLASSES = ROOT / "tests" / "fixtures" / "dra-webhook" / "nvidia-gpu-deviceclasses.yaml"
TEMPLATE = "nvbandwidth-test-compute-domain-1-channel"


def _documents(path: Path) -> list[Json]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def device_classes() -> list[Json]:
    """The chart's five classes: gpu, mig, vfio and the two ComputeDomain classes."""
    return _documents(CLASSES)


def channel_template(namespace: str = "team-a") -> Json:
    (template,) = _documents(DRA / "compute-domain-channel-template-v1.yaml")
    template["metadata"]["namespace"] = namespace
    return template


def worker_template() -> Json:
    """The example MPIJob's Worker pod template, as published."""
    job = next(
        d for d in _documents(DRA / "compute-domain-nvbandwidth-job.yaml") if d["kind"] == "MPIJob"
    )
    return dict(job["spec"]["mpiReplicaSpecs"]["Worker"]["template"])


def with_channel(pod: Json) -> Json:
    """`pod` given the example worker's claim: `spec.resourceClaims` and each container's
    `resources.claims`."""
    worker = worker_template()["spec"]
    result = copy.deepcopy(pod)
    result["spec"]["resourceClaims"] = copy.deepcopy(worker["resourceClaims"])
    claims = worker["containers"][0]["resources"]["claims"]
    for container in result["spec"]["containers"]:
        container.setdefault("resources", {})["claims"] = copy.deepcopy(claims)
    return result


def dra_objects(namespace: str = "team-a") -> list[Json]:
    return [*device_classes(), channel_template(namespace)]
