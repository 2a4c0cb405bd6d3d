"""The CustomResourceDefinitions of the workloads that own training pods, schema-less.

The extender reads PyTorchJobs and JobSets for the size of their gangs; on a real apiserver
they exist only once their CRD does. Each is served with its fields kept as given
(`x-kubernetes-preserve-unknown-fields`): the operators' own schemas are not what is tested.
"""

from __future__ import annotations

import time

from kube_rdma.core.objects import Json
from testbed.controlplane.apply import apply_all
from testbed.controlplane.rest import Rest

WORKLOADS = (
    ("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"),
    ("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
)
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def definition(group: str, version: str, kind: str, plural: str) -> Json:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [{"name": version, "served": True, "storage": True, "schema": schema}],
        },
    }


def install(api: Rest, seconds: float = 30.0) -> None:
    """Create the definitions and wait until the apiserver serves them."""
    apply_all(api, [definition(*w) for w in WORKLOADS])
    deadline = time.monotonic() + seconds
    for group, _, _, plural in WORKLOADS:
        while not _established(api.get(f"{CRD_PATH}/{plural}.{group}")):
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {plural}.{group} not established")
            time.sleep(0.1)


def _established(crd: Json) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
