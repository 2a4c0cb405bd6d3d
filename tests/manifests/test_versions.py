"""The manifests on each current Kubernetes minor version, 1.33 to 1.37 (docs/compatibility.md).

One case per version: every YAML document under manifests/ and every object of every
kustomization's build validates strictly against that version's schemas (kubernetes-validate
ships them per version; where the installed one lacks a version, the newest it has stands in
and `test_the_validator_has_every_versions_schemas` fails, naming it); every field that
manifests/scheduler/configmap.yaml sets in its KubeSchedulerConfiguration
(kubescheduler.config.k8s.io/v1) exists in that version (kubescheduler_v1_fields.json, read off
kubernetes/kube-scheduler's config/v1/types.go per release branch); and the kube-scheduler image
is picked per minor version as docs/compatibility.md says, with `kustomize edit set image` in
an overlay of manifests/, with the tag its table names for that minor.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import kubernetes_validate.utils
import pytest
import yaml

from kube_rdma.core.objects import Json
from testbed.kustomize import identity, needs_kubectl
from tests.manifests.test_kustomizations import schema_objects
from tests.manifests.test_manifests import DOCUMENTS, K8S_VERSIONS, KUBE_SCHEDULER_TAG, MANIFESTS

CURRENT = tuple(v.rsplit(".", 1)[0] for v in K8S_VERSIONS)
# The newest patch release of each minor that kubernetes.io/releases/<minor>/ confirmed when
# docs/compatibility.md was last updated (its table says the same).
KUBE_SCHEDULER_TAGS = {
    "1.33": "v1.33.10",
    "1.34": "v1.34.8",
    "1.35": "v1.35.9",
    "1.36": "v1.36.4",
    "1.37": "v1.37.1",
}
FIELDS = json.loads((Path(__file__).parent / "kubescheduler_v1_fields.json").read_text())
KUBE_SCHEDULER = "registry.k8s.io/kube-scheduler"
SCHEDULER = "rdma-scheduler"
COMPATIBILITY = MANIFESTS.parent / "docs" / "compatibility.md"


def schemas_available() -> list[str]:
    """The minor versions the installed kubernetes-validate has schemas for."""
    versions: list[str] = kubernetes_validate.utils.all_versions()
    return sorted({".".join(v.split(".")[:2]) for v in versions}, key=lambda v: int(v[2:]))


def schema_for(minor: str) -> str:
    """That minor's schemas, or the newest the validator has below it."""
    have = [v for v in schemas_available() if int(v[2:]) <= int(minor[2:])]
    return f"{have[-1]}.0"


def test_the_validator_has_every_versions_schemas() -> None:
    assert set(CURRENT) <= set(schemas_available())


@needs_kubectl
@pytest.mark.parametrize("minor", CURRENT)
def test_every_manifest_validates(minor: str) -> None:
    invalid = []
    built = [(f"build of {d}", doc) for d, doc in schema_objects().values()]
    files = [(name, doc) for name, doc in DOCUMENTS]
    for where, doc in [*files, *built]:
        try:
            kubernetes_validate.validate(doc, schema_for(minor), strict=True)
        except kubernetes_validate.ValidationError as error:
            invalid.append((where, identity(doc), error.message))
    assert invalid == []


def scheduler_configuration() -> Json:
    configmap = yaml.safe_load((MANIFESTS / "scheduler" / "configmap.yaml").read_text())
    config: Json = yaml.safe_load(configmap["data"]["config.yaml"])
    return config


SHAPE: dict[str, Any] = {
    "leaderElection": "LeaderElectionConfiguration",
    "profiles": ["KubeSchedulerProfile", {"plugins": "Plugins", "pluginConfig": ["PluginConfig"]}],
    "extenders": [
        "Extender",
        {"managedResources": ["ExtenderManagedResource"], "tlsConfig": "ExtenderTLSConfig"},
    ],
}
"""Which struct each nested field of a KubeSchedulerConfiguration is (a list: of its items)."""


def unknown_fields(obj: Json, struct: str, shape: dict[str, Any], fields: Json) -> list[str]:
    unknown = [f"{struct}.{key}" for key in obj if key not in fields[struct]]
    for key, inner in shape.items():
        value = obj.get(key)
        if value is None or key not in fields[struct]:
            continue
        many = isinstance(inner, list)
        name, nested = (inner[0], inner[1] if len(inner) > 1 else {}) if many else (inner, {})
        for item in value if many else [value]:
            unknown += unknown_fields(item, name, nested, fields)
    return unknown


@pytest.mark.parametrize("minor", CURRENT)
def test_the_scheduler_configuration_has_only_fields_of_the_version(minor: str) -> None:
    config = scheduler_configuration()
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    fields = FIELDS["versions"][minor]
    assert unknown_fields(config, "KubeSchedulerConfiguration", SHAPE, fields) == []


def test_the_field_check_finds_a_field_a_version_lacks() -> None:
    config = {"profiles": [{"schedulerName": "x", "plugins": {"placementScore": {}}}]}
    fields = FIELDS["versions"]
    shape, top = SHAPE, "KubeSchedulerConfiguration"
    assert unknown_fields(config, top, shape, fields["1.35"]) == ["Plugins.placementScore"]
    assert unknown_fields(config, top, shape, fields["1.36"]) == []
    assert unknown_fields({"extenders": [{"urlPrefx": ""}]}, top, shape, fields["1.36"]) == [
        "Extender.urlPrefx"
    ]


def overlay_with_kube_scheduler(tmp_path: Path, tag: str) -> list[Json]:
    """What docs/compatibility.md says to do: an overlay of manifests/ and
    `kustomize edit set image registry.k8s.io/kube-scheduler:<tag>` in it (which writes this
    `images` entry), built."""
    shutil.copytree(MANIFESTS, tmp_path / "manifests")
    overlay = tmp_path / "my-cluster"
    overlay.mkdir()
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../manifests"],
        "images": [{"name": KUBE_SCHEDULER, "newTag": tag}],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    out = subprocess.run(
        ["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, check=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@needs_kubectl
@pytest.mark.parametrize("minor", CURRENT)
def test_the_kube_scheduler_image_is_picked_per_minor_version(tmp_path: Path, minor: str) -> None:
    tag = KUBE_SCHEDULER_TAGS[minor]
    docs = overlay_with_kube_scheduler(tmp_path, tag)
    [deployment] = [d for d in docs if identity(d) == ("Deployment", "kube-rdma", SCHEDULER)]
    images = [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]]
    assert f"{KUBE_SCHEDULER}:{tag}" in images
    assert not [i for i in images if i.startswith(KUBE_SCHEDULER) and not i.endswith(tag)]
    for doc in docs:
        if doc["apiVersion"].startswith(("cert-manager.io/", "monitoring.coreos.com/")):
            continue
        kubernetes_validate.validate(doc, schema_for(minor), strict=True)


def test_the_compatibility_matrix_has_a_row_per_version() -> None:
    text = COMPATIBILITY.read_text()
    for minor in CURRENT:
        assert f"\n| {minor} |" in text, minor
    assert "kustomize edit set image registry.k8s.io/kube-scheduler:" in text


def test_the_kube_scheduler_tags_are_the_documented_ones() -> None:
    """A tag per current minor, of that minor; the base's is the oldest minor's; the table of
    docs/compatibility.md names the same tags."""
    assert list(KUBE_SCHEDULER_TAGS) == list(CURRENT)
    assert all(tag.startswith(f"v{minor}.") for minor, tag in KUBE_SCHEDULER_TAGS.items())
    assert KUBE_SCHEDULER_TAGS[CURRENT[0]] == KUBE_SCHEDULER_TAG
    rows = re.findall(r"^\| (1\.\d+) \| `(v1\.\d+\.\d+)` \|", COMPATIBILITY.read_text(), re.M)
    assert dict(rows) == KUBE_SCHEDULER_TAGS
