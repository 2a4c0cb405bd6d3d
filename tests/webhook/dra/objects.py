"""The DRA objects the webhook's tests read: the published drivers' own (tests/fixtures/
dra-webhook) and kube-rdma's examples (manifests/examples/dra), placed in test namespaces."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from kube_rdma.core.objects import Json

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "dra-webhook"
EXAMPLES = ROOT / "manifests" / "examples" / "dra"


def documents(path: Path) -> list[Json]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def device_classes() -> list[Json]:
    files = ("nvidia-gpu-deviceclasses.yaml", "dranet-deviceclasses.yaml", "sriov-deviceclass.yaml")
    found = [d for f in files for d in documents(FIXTURES / f)]
    return [*found, *documents(EXAMPLES / "deviceclass.yaml")]


def template(name: str, api_version: str = "resource.k8s.io/v1") -> Json:
    """A published ResourceClaimTemplate by name (and version), without its namespace."""
    for doc in [*documents(FIXTURES / "templates.yaml"), *example_template_list()]:
        if doc["metadata"]["name"] == name and doc["apiVersion"] == api_version:
            found = copy.deepcopy(doc)
            found["metadata"].pop("namespace", None)
            return found
    raise KeyError(name)


def example_template_list() -> list[Json]:
    return documents(EXAMPLES / "resourceclaimtemplate.yaml")


def placed(obj: Json, namespace: str) -> Json:
    obj = copy.deepcopy(obj)
    obj["metadata"]["namespace"] = namespace
    return obj
