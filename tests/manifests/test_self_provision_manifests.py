"""manifests/self-provision: the webhook overlay that provisions its own certificate. Its RBAC
is exactly what `certs.provision.Provisioner` calls, proven against the fake apiserver."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from kubernetes_asyncio import client

from certs.provision import Provisioner, ProvisionSettings
from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import build_parser
from testbed.fakeapi import RESOURCES, FakeApiServer, RecordedRequest, Resource
from tests.manifests.test_manifests import K8S_VERSIONS

ROOT = Path(__file__).resolve().parents[2]
OVERLAY = ROOT / "manifests/self-provision"
TLS_RESOURCES = {
    **RESOURCES,
    "secrets": Resource("Secret", True),
    "mutatingwebhookconfigurations": Resource(
        "MutatingWebhookConfiguration", False, "admissionregistration.k8s.io/v1"
    ),
}


def documents(name: str) -> list[Json]:
    return [d for d in yaml.safe_load_all((OVERLAY / name).read_text()) if d]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("index", range(4))
def test_rbac_validates(index: int, version: str) -> None:
    kubernetes_validate.validate(documents("rbac.yaml")[index], version, strict=True)


def rendered() -> list[Json]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    out = subprocess.run(
        ["kubectl", "kustomize", str(OVERLAY)], capture_output=True, text=True, check=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_the_rendered_deployment_provisions_instead_of_mounting() -> None:
    objects = rendered()
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(deployment, version, strict=True)
    spec = deployment["spec"]["template"]["spec"]
    [container] = spec["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.self_provision is True
    assert (args.tls_cert_file, args.tls_key_file) == (None, None)
    assert {e["name"] for e in container["env"]} >= {"POD_NAMESPACE"}
    assert "tls" not in {v["name"] for v in spec["volumes"]}
    assert "/tls" not in {m["mountPath"] for m in container["volumeMounts"]}
    kinds = sorted(o["kind"] for o in objects)
    assert kinds.count("Role") == 1
    assert kinds.count("ClusterRole") == 2  # the webhook's namespace reader and the caBundle one


def authorized_as(request: RecordedRequest) -> tuple[str, str, str]:
    parts = request.path.strip("/").split("/")
    group, rest = ("", parts[2:]) if parts[0] == "api" else (parts[1], parts[3:])
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}[request.method]
    if request.method == "GET" and len(rest) == 1:
        verb = "list"
    return group, rest[0], verb


async def test_rbac_is_exactly_what_the_provisioner_calls() -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    clock = {"now": now}
    async with FakeApiServer(TLS_RESOURCES) as fake, fake.api_client() as api:
        manifest = ROOT / "manifests/webhook/mutatingwebhookconfiguration.yaml"
        fake.create("mutatingwebhookconfigurations", yaml.safe_load(manifest.read_text()))
        settings = ProvisionSettings("kube-rdma", "kube-rdma-webhook", now=lambda: clock["now"])
        provisioner = Provisioner(
            client.CoreV1Api(api), client.AdmissionregistrationV1Api(api), settings
        )
        pair = await provisioner.ensure()  # creates the Secret
        await provisioner.sync_ca_bundle(pair.ca_bundle_pem)  # patches the configuration
        clock["now"] = now + dt.timedelta(days=300)
        await provisioner.ensure()  # renews: reads and updates the Secret
    called = {authorized_as(r) for r in fake.requests}
    assert called == {
        ("", "secrets", "get"),
        ("", "secrets", "create"),
        ("", "secrets", "update"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch"),
    }
    granted = {
        (group, resource, verb)
        for doc in documents("rbac.yaml")
        if doc["kind"] in ("Role", "ClusterRole")
        for rule in doc["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == called
    names = {
        doc["rules"][0]["resources"][0]: doc["rules"][0].get("resourceNames")
        for doc in documents("rbac.yaml")
        if doc["kind"] in ("Role", "ClusterRole")
    }
    assert names == {
        "secrets": ["kube-rdma-webhook-tls"],
        "mutatingwebhookconfigurations": ["kube-rdma"],
    }
