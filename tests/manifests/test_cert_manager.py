"""manifests/cert-manager: the webhook overlay whose TLS cert-manager issues, renews and injects.

kubernetes-validate has no schema for cert-manager's resources, so those are pinned field by
field against what the rest of kube-rdma expects: the Secret the Deployment mounts, the Service
names `kube-rdma certs generate` covers, its key type and lifetimes, and a renewal with a third
of the lifetime left. The one core object, the patch that asks cainjector for the caBundle, is
validated against the Kubernetes schema, alone and applied to the base configuration.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from certs.generate import CA_LIFETIME, SERVING_LIFETIME, service_dns_names
from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import build_parser
from testbed import kustomize
from tests.manifests.test_manifests import (
    DOCUMENTS,
    K8S_VERSIONS,
    MANIFESTS,
    NAMESPACE,
    SERVICE,
    container,
    find,
    pod_spec,
)

OVERLAY = MANIFESTS / "cert-manager"
CERT_MANAGER = "cert-manager.io/v1"
WEBHOOK_CONFIGURATION = ("MutatingWebhookConfiguration", "kube-rdma")
INJECT_CA_FROM = "cert-manager.io/inject-ca-from"
ISSUER_REF = {"group": "cert-manager.io", "kind": "Issuer"}
ECDSA_P256 = {"algorithm": "ECDSA", "size": 256}


def load_overlay() -> dict[str, list[Json]]:
    """The documents of each YAML file in the overlay but kustomization.yaml, by file name."""
    return {
        path.name: [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
        for path in sorted(OVERLAY.glob("*.yaml"))
        if path.name != "kustomization.yaml"
    }


FILES = load_overlay()
KUSTOMIZATION: Json = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())


def cert_manager_object(kind: str, name: str) -> Json:
    found = [
        doc
        for doc in FILES["certificates.yaml"]
        if (doc["kind"], doc["metadata"]["name"]) == (kind, name)
    ]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def issuer(ref: Json) -> Json:
    """The Issuer an issuerRef names, which must be a namespaced cert-manager Issuer."""
    assert ref == {**ISSUER_REF, "name": ref["name"]}
    return cert_manager_object("Issuer", ref["name"])


def serving_certificate() -> Json:
    return cert_manager_object("Certificate", "kube-rdma-webhook")


def hours(duration: str) -> int:
    """A Go duration in whole hours ("8760h"), the only form these manifests use."""
    match = re.fullmatch(r"(\d+)h", duration)
    assert match, f"{duration!r} is not a whole number of hours"
    return int(match[1])


def tls_secret_of_the_deployment() -> str:
    """The Secret mounted where the webhook's --tls-cert-file and --tls-key-file point."""
    args = build_parser().parse_args(container()["args"])
    assert args.tls_cert_file.parent == args.tls_key_file.parent
    mount = next(
        m for m in container()["volumeMounts"] if Path(m["mountPath"]) == args.tls_cert_file.parent
    )
    volume = next(v for v in pod_spec()["volumes"] if v["name"] == mount["name"])
    name: str = volume["secret"]["secretName"]
    return name


def with_injection(base: Json) -> Json:
    patched = copy.deepcopy(base)
    annotations = patched["metadata"].setdefault("annotations", {})
    annotations[INJECT_CA_FROM] = f"{NAMESPACE}/{serving_certificate()['metadata']['name']}"
    return patched


# --- the overlay ----------------------------------------------------------------------------


def test_overlay_is_the_webhook_plus_certificates_and_the_patch() -> None:
    assert sorted(FILES) == ["certificates.yaml", "inject-ca-patch.yaml"]
    assert KUSTOMIZATION["resources"] == ["../webhook", "certificates.yaml"]
    assert KUSTOMIZATION["patches"] == [
        {
            "path": "inject-ca-patch.yaml",
            "target": {
                "group": "admissionregistration.k8s.io",
                "version": "v1",
                "kind": WEBHOOK_CONFIGURATION[0],
                "name": WEBHOOK_CONFIGURATION[1],
            },
        }
    ]


def test_certificates_yaml_holds_the_issuer_chain_in_order() -> None:
    docs = FILES["certificates.yaml"]
    assert [(d["apiVersion"], d["kind"], d["metadata"]["name"]) for d in docs] == [
        (CERT_MANAGER, "Issuer", "kube-rdma-selfsigned"),
        (CERT_MANAGER, "Certificate", "kube-rdma-ca"),
        (CERT_MANAGER, "Issuer", "kube-rdma-ca"),
        (CERT_MANAGER, "Certificate", "kube-rdma-webhook"),
    ]
    # The webhook's namespace, which manifests/namespaces creates.
    assert {d["metadata"]["namespace"] for d in docs} == {NAMESPACE}
    assert find("Namespace", NAMESPACE)


# --- the issuer chain -----------------------------------------------------------------------


def test_serving_certificate_is_signed_by_a_ca_issuer_rooted_in_a_self_signed_one() -> None:
    ca_issuer = issuer(serving_certificate()["spec"]["issuerRef"])
    ca_secret = ca_issuer["spec"]["ca"]["secretName"]
    assert ca_issuer["spec"] == {"ca": {"secretName": ca_secret}}
    ca = cert_manager_object("Certificate", "kube-rdma-ca")
    assert ca["spec"]["secretName"] == ca_secret
    assert ca["spec"]["isCA"] is True
    root = issuer(ca["spec"]["issuerRef"])
    assert root["spec"] == {"selfSigned": {}}


def test_ca_certificate() -> None:
    assert cert_manager_object("Certificate", "kube-rdma-ca")["spec"] == {
        "isCA": True,
        "commonName": f"kube-rdma CA for {SERVICE}.{NAMESPACE}",
        "secretName": "kube-rdma-ca",
        "duration": f"{CA_LIFETIME.days * 24}h",
        "renewBefore": f"{CA_LIFETIME.days * 24 // 3}h",
        # The key survives renewal, so serving certificates issued before it still verify.
        "privateKey": {**ECDSA_P256, "rotationPolicy": "Never"},
        "issuerRef": {**ISSUER_REF, "name": "kube-rdma-selfsigned"},
    }


def test_serving_certificate() -> None:
    assert serving_certificate()["spec"] == {
        "secretName": tls_secret_of_the_deployment(),
        "secretTemplate": {
            "labels": {
                "app.kubernetes.io/name": "kube-rdma",
                "app.kubernetes.io/component": "webhook",
            }
        },
        "dnsNames": service_dns_names(SERVICE, NAMESPACE),
        "duration": f"{SERVING_LIFETIME.days * 24}h",
        "renewBefore": "2920h",
        "privateKey": {**ECDSA_P256, "rotationPolicy": "Always"},
        "usages": ["digital signature", "server auth"],
        "issuerRef": {**ISSUER_REF, "name": "kube-rdma-ca"},
    }


@pytest.mark.parametrize("name", ["kube-rdma-ca", "kube-rdma-webhook"])
def test_renewal_starts_with_a_third_of_the_lifetime_left(name: str) -> None:
    spec = cert_manager_object("Certificate", name)["spec"]
    assert 3 * hours(spec["renewBefore"]) == hours(spec["duration"])


def test_serving_secret_is_the_one_the_deployment_mounts() -> None:
    assert serving_certificate()["spec"]["secretName"] == "kube-rdma-webhook-tls"
    assert tls_secret_of_the_deployment() == "kube-rdma-webhook-tls"


# --- the cainjector annotation --------------------------------------------------------------


def test_patch_asks_cainjector_for_the_serving_certificates_ca() -> None:
    assert FILES["inject-ca-patch.yaml"] == [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": WEBHOOK_CONFIGURATION[0],
            "metadata": {
                "name": WEBHOOK_CONFIGURATION[1],
                "annotations": {INJECT_CA_FROM: "kube-rdma/kube-rdma-webhook"},
            },
        }
    ]
    # It patches an object of the base and names the overlay's serving Certificate.
    assert find(*WEBHOOK_CONFIGURATION)
    metadata = serving_certificate()["metadata"]
    assert f"{metadata['namespace']}/{metadata['name']}" == "kube-rdma/kube-rdma-webhook"


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_patch_and_patched_configuration_validate(version: str) -> None:
    (patch,) = FILES["inject-ca-patch.yaml"]
    kubernetes_validate.validate(patch, version, strict=True)
    kubernetes_validate.validate(with_injection(find(*WEBHOOK_CONFIGURATION)), version, strict=True)


@kustomize.needs_kubectl
def test_kustomize_build_is_the_webhook_with_certificates_and_the_annotation() -> None:
    built = {(d["kind"], d["metadata"]["name"]): d for d in kustomize.built("cert-manager")}
    base = {
        (d["kind"], d["metadata"]["name"]): d
        for name, d in DOCUMENTS
        if name.startswith("webhook/")
    }
    ours = {(d["kind"], d["metadata"]["name"]): d for d in FILES["certificates.yaml"]}
    assert sorted(built) == sorted([*base, *ours])
    assert built[WEBHOOK_CONFIGURATION] == with_injection(base[WEBHOOK_CONFIGURATION])
    assert built[WEBHOOK_CONFIGURATION]["metadata"]["annotations"] == {
        INJECT_CA_FROM: "kube-rdma/kube-rdma-webhook"
    }
    unchanged = [key for key in base if key != WEBHOOK_CONFIGURATION]
    assert [built[key] for key in unchanged] == [base[key] for key in unchanged]
    assert [built[key] for key in ours] == list(ours.values())
