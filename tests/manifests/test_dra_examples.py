"""The DRA examples in manifests/examples/dra: valid against Kubernetes 1.34 (the first release
serving resource.k8s.io/v1, strict schemas from kubernetes-validate) and the newest, and shaped
as their comments say: eight GPU-NIC pairs, each pair under its own pcieRoot constraint.

The JSON schemas check types and field names only. What the apiserver's validation adds
(kubernetes pkg/apis/resource/validation) is checked here by hand where the examples depend on
it: request names unique, constraints naming existing requests, at most 32 requests and 32
constraints (DeviceRequestsMaxSize, DeviceConstraintsMaxSize in pkg/apis/resource/types.go).
The CEL expressions are not compiled here.
"""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from kube_rdma.core.objects import Json
from webhook.dra.classes import Verdict
from webhook.dra.kinds import DeviceKind, alternative_verdict, device_requests
from webhook.profiles import Dra

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "dra"
VERSIONS = ("1.34.0", "1.37.0")
MAX_REQUESTS = MAX_CONSTRAINTS = 32


def documents(name: str) -> list[Json]:
    return [d for d in yaml.safe_load_all((EXAMPLES / name).read_text()) if d]


def test_the_examples_are_what_the_folder_holds() -> None:
    assert sorted(p.name for p in EXAMPLES.iterdir()) == [
        "deviceclass.yaml",
        "resourceclaimtemplate.yaml",
    ]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["deviceclass.yaml", "resourceclaimtemplate.yaml"])
def test_valid_against_the_schema(name: str, version: str) -> None:
    for doc in documents(name):
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_schema_check_can_fail() -> None:
    (template,) = documents("resourceclaimtemplate.yaml")
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClass"] = "typo"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(template, "1.34.0", strict=True)


def test_eight_pairs_each_under_its_own_pcie_root_constraint() -> None:
    (template,) = documents("resourceclaimtemplate.yaml")
    devices = template["spec"]["spec"]["devices"]
    requests = {r["name"]: r["exactly"]["deviceClassName"] for r in devices["requests"]}
    assert len(requests) == len(devices["requests"]) == 16 <= MAX_REQUESTS
    assert devices["constraints"] == [
        {"requests": [f"gpu-{i}", f"nic-{i}"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
        for i in range(8)
    ]
    assert len(devices["constraints"]) <= MAX_CONSTRAINTS
    assert requests == {
        **{f"gpu-{i}": "gpu.nvidia.com" for i in range(8)},
        **{f"nic-{i}": "rdma-nic.dra.net" for i in range(8)},
    }


def test_the_webhook_counts_the_class_as_rdma_nics_by_its_cel() -> None:
    (device_class,) = documents("deviceclass.yaml")
    name = device_class["metadata"]["name"]
    (template,) = documents("resourceclaimtemplate.yaml")
    assert alternative_verdict(name, device_class, (), Dra()) == Verdict(DeviceKind.NIC)
    assert alternative_verdict(name, None, (), Dra()) == Verdict(None), "not listed by name"
    assert len(device_requests(template)) == 16
