"""Every kustomization under manifests/, built as `kubectl apply -k` would build it.

What an admin applies is the build, not the files: the root (`kubectl apply -k manifests/`, the
whole default stack), each component directory for admins who apply parts, each overlay. Every
build must succeed and every object in it validate strictly against each Kubernetes minor
version the README claims. The Prometheus operator's and cert-manager's objects have no schema
there, so they are checked for shape; the root needs no CRD at all. The namespaces come from the
root only, so deleting one component never deletes the namespace the others live in. And the
all-in-one release YAML is the root's build with the version stamped, nothing else.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import build_parser
from testbed import release_manifests
from testbed.kustomize import (
    ROOT_STACK,
    built,
    built_text,
    by_identity,
    identity,
    kustomization,
    needs_kubectl,
    object_of,
)
from tests.manifests.test_manifests import (
    IMAGE,
    K8S_VERSIONS,
    KUBE_SCHEDULER_TAG,
    MANIFESTS,
    NAMESPACE,
    PYPROJECT,
)

pytestmark = needs_kubectl

COMPONENTS = (
    "namespaces",
    "webhook",
    "self-provision",
    "cert-manager",
    "agent",
    "extender",
    "scheduler",
    "monitoring",
)
OVERLAYS = (
    "overlays/cert-manager",
    "overlays/kubeflow-trainer",
    "overlays/large-cluster",
    "overlays/network-operator",
)
KUSTOMIZATIONS = (".", *COMPONENTS, *OVERLAYS)
# CRD-backed kinds, by API version: no schema in kubernetes-validate.
CRD_KINDS = {
    "cert-manager.io/v1": {"Issuer", "Certificate"},
    "monitoring.coreos.com/v1": {"PrometheusRule", "ServiceMonitor"},
}


def test_every_kustomization_is_tested() -> None:
    found = {p.parent.relative_to(MANIFESTS).as_posix() for p in MANIFESTS.rglob("kustomization.*")}
    assert sorted(found) == sorted(KUSTOMIZATIONS)


def schema_objects() -> dict[str, tuple[str, Json]]:
    """Each distinct object of a schema'd kind over every build, with where it was first built
    (most objects are the same in many builds; each is validated once per version)."""
    found: dict[str, tuple[str, Json]] = {}
    for directory in KUSTOMIZATIONS:
        for doc in built(directory):
            if doc["kind"] not in CRD_KINDS.get(doc["apiVersion"], ()):
                found.setdefault(json.dumps(doc, sort_keys=True), (directory, doc))
    return found


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_object_validates(version: str) -> None:
    invalid = []
    for directory, doc in schema_objects().values():
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            invalid.append((directory, identity(doc), error.message))
    assert invalid == []


CERT_MANAGER_OBJECTS = [
    ("Certificate", "kube-rdma-ca"),
    ("Certificate", "kube-rdma-webhook"),
    ("Issuer", "kube-rdma-ca"),
    ("Issuer", "kube-rdma-selfsigned"),
]
CRD_OBJECTS = {
    "cert-manager": CERT_MANAGER_OBJECTS,
    "overlays/cert-manager": CERT_MANAGER_OBJECTS,
    "monitoring": [("PrometheusRule", "kube-rdma"), ("ServiceMonitor", "kube-rdma-webhook")],
}
"""The CRD-backed objects each build holds (sorted by kind and name); none where not listed."""


@pytest.mark.parametrize("directory", KUSTOMIZATIONS)
def test_crd_objects_have_their_shape(directory: str) -> None:
    docs = [d for d in built(directory) if d["kind"] in CRD_KINDS.get(d["apiVersion"], ())]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in docs) == CRD_OBJECTS.get(
        directory, []
    )
    for doc in docs:
        assert doc.keys() == {"apiVersion", "kind", "metadata", "spec"}, identity(doc)
        assert doc["metadata"]["namespace"] == NAMESPACE
        assert doc["metadata"]["labels"]["app.kubernetes.io/name"] == "kube-rdma"
        assert isinstance(doc["spec"], dict)
        assert doc["spec"]


def test_the_root_applies_without_any_crd() -> None:
    groups = {d["apiVersion"].rpartition("/")[0] for d in built(".")}
    assert groups == {
        "",
        "apps",
        "policy",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "networking.k8s.io",
        "admissionregistration.k8s.io",
    }


def test_the_root_is_the_default_stack() -> None:
    assert kustomization(".")["resources"] == list(ROOT_STACK)
    parts = [d for directory in ROOT_STACK for d in built(directory)]
    assert by_identity(built(".")) == by_identity(parts)


def test_the_root_provisions_the_webhook_certificate() -> None:
    deployment = object_of(built("."), "Deployment", "kube-rdma-webhook")
    parsed = build_parser().parse_args(
        deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    assert parsed.self_provision is True
    assert parsed.tls_cert_file is None


def test_only_the_root_creates_namespaces() -> None:
    creating = sorted(
        directory
        for directory in KUSTOMIZATIONS
        if any(d["kind"] == "Namespace" for d in built(directory))
    )
    assert creating == [".", "namespaces", *OVERLAYS]
    names = [d["metadata"]["name"] for d in built("namespaces")]
    assert names == [NAMESPACE, "kube-rdma-agent", "kube-rdma-plans"]


@pytest.mark.parametrize("directory", COMPONENTS)
def test_each_component_lives_in_the_roots_namespaces(directory: str) -> None:
    created = {d["metadata"]["name"] for d in built("namespaces")}
    used = {d["metadata"]["namespace"] for d in built(directory) if "namespace" in d["metadata"]}
    assert used <= created | {"kube-system"}


# Each overlay lists the root's stack itself: kustomize refuses `../..`, which contains it.
OVERLAY_STACKS = {
    "overlays/cert-manager": [p.replace("self-provision", "cert-manager") for p in ROOT_STACK],
    "overlays/kubeflow-trainer": list(ROOT_STACK),
    "overlays/large-cluster": list(ROOT_STACK),
    "overlays/network-operator": list(ROOT_STACK),
}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_builds_on_the_roots_stack(overlay: str) -> None:
    resources = kustomization(overlay)["resources"]
    stack = [r.removeprefix("../../") for r in resources if r.startswith("../../")]
    assert stack == OVERLAY_STACKS[overlay]


def test_the_cert_manager_overlay_is_the_root_with_cert_manager_tls() -> None:
    root, overlay = by_identity(built(".")), by_identity(built("overlays/cert-manager"))
    provisioning = by_identity(built("self-provision")).keys() - by_identity(built("webhook"))
    certificates = by_identity(built("cert-manager")).keys() - by_identity(built("webhook"))
    assert overlay.keys() == (root.keys() - provisioning) | certificates


# --- the all-in-one release YAML ------------------------------------------------------------

IMAGE_REF = re.compile(rf"{re.escape(IMAGE)}:\S+?(?=[\s\"']|$)", re.MULTILINE)


def test_release_is_the_roots_build_with_the_version_stamped() -> None:
    root = built_text(".")
    stamped = release_manifests.stamp(root, "9.9.9")
    header, body = stamped.split("\n", 2)[:2], stamped.split("\n", 2)[2]
    assert header == [
        "# kube-rdma 9.9.9: everything `kubectl apply -k manifests/` installs, in one file.",
        "# Install or upgrade: kubectl apply -f kube-rdma.yaml (docs/install.md).",
    ]
    version = PYPROJECT["project"]["version"]
    assert body.replace(f"{IMAGE}:9.9.9", f"{IMAGE}:{version}") == root
    # Every kube-rdma image: four containers (the agent's read-vpd init container among them)
    # and the resolver image of the profiles.
    assert IMAGE_REF.findall(body) == [f"{IMAGE}:9.9.9"] * 5
    # The cluster's kube-scheduler, not the release's.
    assert f"registry.k8s.io/kube-scheduler:{KUBE_SCHEDULER_TAG}" in body


def test_a_release_with_a_digest_pins_every_image_of_ours() -> None:
    """The resolver image in the profiles runs as an init container in every pod of a
    gid.strategy pod profile: pinned by digest, a moved tag cannot change what runs there."""
    from webhook.profiles import parse_profiles
    from webhook.profiles.gid import pinned

    digest = "sha256:" + "5e" * 32
    body = release_manifests.stamp(built_text("."), "9.9.9", digest).split("\n", 2)[2]
    assert IMAGE_REF.findall(body) == [f"{IMAGE}:9.9.9@{digest}"] * 5
    docs = [d for d in yaml.safe_load_all(body) if d]
    [profiles] = [d for d in docs if d["metadata"]["name"] == "kube-rdma-profiles"]
    parsed = parse_profiles(profiles["data"]["profiles.yaml"], "release")
    assert all(pinned(p.gid.image) for p in parsed.profiles.values())
    assert parsed.load_warnings() == {}
    # Stamping twice (a release of a release) pins once.
    again = release_manifests.stamp(body, "9.9.9", digest).split("\n", 2)[2]
    assert again == body
    with pytest.raises(ValueError, match="not an image digest"):
        release_manifests.stamp(body, "9.9.9", "sha256:abc")


def test_release_writes_the_projects_version(tmp_path: Path) -> None:
    out = release_manifests.release(tmp_path / "dist" / "kube-rdma.yaml")
    version = PYPROJECT["project"]["version"]
    assert release_manifests.project_version() == version
    assert out.read_text() == release_manifests.stamp(built_text("."), version)
    docs = [d for d in yaml.safe_load_all(out.read_text()) if d]
    assert by_identity(docs) == by_identity(built("."))


def test_make_release_manifests_runs_the_release() -> None:
    makefile = (MANIFESTS.parent / "Makefile").read_text()
    recipe = makefile.split("\nrelease-manifests:\n", 1)[1].split("\n\n", 1)[0]
    assert recipe.strip() == "$(PYTHON) -m testbed.release_manifests --out dist/kube-rdma.yaml"
    assert "/dist/" in (MANIFESTS.parent / ".gitignore").read_text().split()


def test_every_image_of_ours_carries_the_projects_version() -> None:
    version = PYPROJECT["project"]["version"]
    for directory in KUSTOMIZATIONS:
        assert set(IMAGE_REF.findall(built_text(directory))) <= {f"{IMAGE}:{version}"}


def test_the_readme_claims_the_versions_tested() -> None:
    readme = (MANIFESTS.parent / "README.md").read_text()
    section = readme.split("\n## Compatibility\n", 1)[1].split("\n## ", 1)[0]
    # The claim is the section's opening, up to its colon; what follows may name versions
    # for what they lack.
    claim = section.strip().split(":", 1)[0]
    assert claim.startswith("Kubernetes ")
    claimed = re.findall(r"\b1\.(\d+)\b", claim)
    assert [f"1.{minor}.0" for minor in claimed] == list(K8S_VERSIONS)
