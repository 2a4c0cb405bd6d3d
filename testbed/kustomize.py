"""Building the kustomizations under manifests/ once per test session, for the tests that check
what `kubectl apply -k` would send to a cluster rather than the files themselves: the build of
a kustomization as objects, each object's identity, and the kustomization file itself."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kube_rdma.core.objects import Json

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"

needs_kubectl = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not installed"
)

# What `kubectl apply -k manifests/` installs, in the order its kustomization lists it.
ROOT_STACK = ("namespaces", "self-provision", "agent", "extender", "scheduler")


@functools.cache
def built_text(directory: str) -> str:
    """`kubectl kustomize manifests/<directory>` ("." for the root)."""
    return subprocess.run(
        ["kubectl", "kustomize", str(MANIFESTS / directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout


def built(directory: str) -> list[Json]:
    """The objects of a kustomization's build, freshly parsed (callers may change them)."""
    return [doc for doc in yaml.safe_load_all(built_text(directory)) if doc]


def identity(doc: Json) -> tuple[str, str, str]:
    """What names an object in a cluster: kind, namespace ("" when cluster-scoped), name."""
    return doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"]


def by_identity(docs: list[Json]) -> dict[tuple[str, str, str], Json]:
    """`docs` keyed by their identity; fails the test when two share one."""
    found = {identity(d): d for d in docs}
    assert len(found) == len(docs), "an object built twice"
    return found


def object_of(docs: list[Json], kind: str, name: str) -> Json:
    """The one object of `docs` of this kind and name."""
    [found] = [d for d in docs if (d["kind"], d["metadata"]["name"]) == (kind, name)]
    return found


def kustomization(directory: str) -> Json:
    """manifests/<directory>/kustomization.yaml, parsed."""
    data: Json = yaml.safe_load((MANIFESTS / directory / "kustomization.yaml").read_text())
    return data
