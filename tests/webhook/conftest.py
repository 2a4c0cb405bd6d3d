"""The webhook's test settings: the test profiles and the namespaces the tests create pods in."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from testbed.builders import pods
from webhook.app import Settings

NAMESPACES = {
    "team-a": {},
    "ml-training": {"kube-rdma.io/injection": "enabled"},
    "locked": {"pod-security.kubernetes.io/enforce": "baseline"},
    "typo": {"pod-security.kubernetes.io/enforce": "baseln"},
}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(pods.PROFILES_YAML)
    namespaces = tmp_path / "namespaces.yaml"
    items = [
        {"kind": "Namespace", "metadata": {"name": n, "labels": labels}}
        for n, labels in NAMESPACES.items()
    ]
    namespaces.write_text(orjson.dumps({"kind": "List", "items": items}).decode())
    return Settings(profiles_file=profiles, namespaces_file=namespaces, own_namespace="kube-rdma")
