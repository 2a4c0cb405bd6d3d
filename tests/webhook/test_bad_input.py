"""Every kind of bad input gets an exact, actionable answer, and nothing crashes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from kube_rdma.core.objects import Json
from testbed.builders import pods
from tests.conftest import Serve
from webhook.app import Settings
from webhook.namespaces import Labels

UID = "0b5c3e2a-7f1d-4c88-9a51-3d2e1f0a9b77"


def review_body(
    request: Any, api_version: str = "admission.k8s.io/v1", kind: str = "AdmissionReview"
) -> bytes:
    return orjson.dumps({"apiVersion": api_version, "kind": kind, "request": request})


HTTP_ERRORS = [
    (
        "empty",
        b"",
        400,
        "empty body: expected an AdmissionReview (admission.k8s.io/v1) JSON document",
    ),
    (
        "whitespace",
        b"  \n",
        400,
        "empty body: expected an AdmissionReview (admission.k8s.io/v1) JSON document",
    ),
    (
        "not-json",
        b"{not json",
        400,
        "body is not JSON (error at line 1, column 2): expected an AdmissionReview "
        "(admission.k8s.io/v1)",
    ),
    ("json-array", b"[1, 2]", 400, "body is a JSON list, expected an AdmissionReview object"),
    (
        "v1beta1",
        review_body({"uid": UID}, api_version="admission.k8s.io/v1beta1"),
        400,
        "expected kind AdmissionReview with apiVersion admission.k8s.io/v1, got kind "
        "'AdmissionReview' with apiVersion 'admission.k8s.io/v1beta1'; list admission.k8s.io/v1 "
        "in admissionReviewVersions",
    ),
    (
        "a-pod",
        orjson.dumps({"apiVersion": "v1", "kind": "Pod"}),
        400,
        "expected kind AdmissionReview with apiVersion admission.k8s.io/v1, got kind 'Pod' with "
        "apiVersion 'v1'; list admission.k8s.io/v1 in admissionReviewVersions",
    ),
    ("no-request", review_body(None), 400, "AdmissionReview has no `request` object"),
    ("no-uid", review_body({"operation": "CREATE"}), 400, "AdmissionReview request has no `uid`"),
    (
        "pod-without-object",
        review_body({**pods.request(pods.mpijob_launcher("x")), "object": None}),
        400,
        "a Pod CREATE review needs the pod in request.object",
    ),
]


@pytest.mark.parametrize(
    ("body", "status", "message"), [c[1:] for c in HTTP_ERRORS], ids=[c[0] for c in HTTP_ERRORS]
)
async def test_malformed_bodies_get_http_errors(
    body: bytes, status: int, message: str, serve: Serve
) -> None:
    async with serve(Settings()) as client:
        assert await client.post(body) == (status, {"error": message})


async def test_oversized_body_gets_413(serve: Serve) -> None:
    pod = pods.pytorchjob("worker", 0, "team-a", {"big": "x" * 5000})
    async with serve(Settings(max_body_bytes=4096)) as client:
        status, body = await client.post(review_body(pods.request(pod)))
    assert (status, body) == (
        413,
        {"error": "body larger than the 4096-byte limit (--max-body-bytes)"},
    )


def _pod_request(**changes: Any) -> Json:
    pod = pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/inject": "true"})
    return {**pods.request(pod), **changes}


ALLOWED_UNTOUCHED = [
    (
        "deployment",
        _pod_request(
            kind={"group": "apps", "version": "v1", "kind": "Deployment"},
            resource={"group": "apps", "version": "v1", "resource": "deployments"},
        ),
    ),
    ("update", _pod_request(operation="UPDATE")),
    ("delete", _pod_request(operation="DELETE", object=None)),
    ("ephemeral-subresource", _pod_request(subResource="ephemeralcontainers")),
]


@pytest.mark.parametrize(
    "request_", [c[1] for c in ALLOWED_UNTOUCHED], ids=[c[0] for c in ALLOWED_UNTOUCHED]
)
async def test_other_kinds_and_operations_are_allowed_without_patch(
    request_: Json, serve: Serve
) -> None:
    async with serve(Settings()) as client:
        assert await client.review(request_) == {"uid": UID, "allowed": True}


def _annotated(annotations: dict[str, str], namespace: str = "team-a") -> Json:
    return pods.request(pods.pytorchjob("worker", 0, namespace, annotations))


DENIALS = [
    (
        "unknown-profile",
        _annotated({"kube-rdma.io/profile": "rails16"}),
        "RDMA profile 'rails16' (annotation kube-rdma.io/profile) does not exist; valid "
        "profiles: default, exclude, hostnet, lenient, node, rails8, roce-pod, roce-pod-env, sriov",
    ),
    (
        "inject-not-boolean",
        _annotated({"kube-rdma.io/inject": "yes"}),
        'kube-rdma.io/inject must be "true" or "false", not \'yes\'',
    ),
    (
        "unknown-container",
        _annotated({"kube-rdma.io/inject": "true", "kube-rdma.io/containers": "pytorch,trainer"}),
        "kube-rdma.io/containers names trainer, which the pod does not have; its containers "
        "are pytorch",
    ),
    (
        "baseline-namespace",
        _annotated({"kube-rdma.io/inject": "true"}, namespace="locked"),
        'namespace "locked" enforces Pod Security level "baseline", which forbids what RDMA '
        'profile "default" adds: capability IPC_LOCK, hostPath volume /dev/infiniband. Label the '
        "namespace pod-security.kubernetes.io/enforce=privileged, or ask the admin for a profile "
        "without them (ipcLock: false, devices: plugin, hostNetwork: false) or with "
        "podSecurityConflict: skip",
    ),
    (
        "bad-networks-annotation",
        _annotated({"kube-rdma.io/profile": "rails8", "k8s.v1.cni.cncf.io/networks": "[{"}),
        "k8s.v1.cni.cncf.io/networks is not valid JSON: Expecting property name enclosed in "
        "double quotes: line 1 column 3 (char 2); fix the annotation so kube-rdma can add the "
        "rail networks",
    ),
]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(pods.PROFILES_YAML)
    namespaces = tmp_path / "namespaces.yaml"
    namespaces.write_text(
        "kind: Namespace\nmetadata: {name: locked, labels: "
        "{pod-security.kubernetes.io/enforce: baseline}}\n"
        "---\nkind: Namespace\nmetadata: {name: typo, labels: "
        "{pod-security.kubernetes.io/enforce: baseln}}\n"
    )
    return Settings(profiles_file=profiles, namespaces_file=namespaces)


@pytest.mark.parametrize(
    ("request_", "message"), [c[1:] for c in DENIALS], ids=[c[0] for c in DENIALS]
)
async def test_denials_say_what_to_change(
    request_: Json, message: str, serve: Serve, settings: Settings
) -> None:
    async with serve(settings) as client:
        assert await client.review(request_) == {
            "uid": UID,
            "allowed": False,
            "status": {"code": 403, "reason": "Forbidden", "message": message},
        }


async def test_invalid_pod_security_label_is_enforced_as_restricted(
    serve: Serve, settings: Settings
) -> None:
    async with serve(settings) as client:
        response = await client.review(_annotated({"kube-rdma.io/inject": "true"}, "typo"))
    assert response["allowed"] is False
    assert response["warnings"] == [
        "pod-security.kubernetes.io/enforce='baseln' is not a Pod Security level; it is "
        "enforced as restricted"
    ]
    assert response["status"]["message"].startswith(
        'namespace "typo" enforces Pod Security level "restricted"'
    )


class BrokenNamespaces:
    """A namespace source whose lookups fail, as when the apiserver cannot be reached."""

    async def labels(self, name: str) -> Labels:
        raise ConnectionError("apiserver unreachable")

    def ready(self) -> bool:
        return True


async def test_internal_error_is_a_denial_with_the_same_uid(serve: Serve) -> None:
    async with serve(Settings(), BrokenNamespaces()) as client:
        response = await client.review(_annotated({"kube-rdma.io/inject": "true"}))
        metrics_status, metrics = await client.get("/metrics")
    assert response == {
        "uid": UID,
        "allowed": False,
        "status": {
            "code": 500,
            "reason": "InternalError",
            "message": "kube-rdma webhook internal error (ConnectionError); see the webhook's logs",
        },
    }
    assert metrics_status == 200
    assert 'kube_rdma_webhook_reviews_total{outcome="error",profile=""} 1.0' in metrics


MALFORMED_OBJECTS = [
    ("metadata-not-object", {"metadata": "x", "spec": {}}, "metadata is a JSON string"),
    (
        "containers-not-list",
        {"metadata": {"annotations": {"kube-rdma.io/inject": "true"}}, "spec": {"containers": 5}},
        "spec.containers is a JSON number",
    ),
    (
        "container-not-object",
        {"metadata": {}, "spec": {"containers": [{"name": "a"}, "b"]}},
        "spec.containers[1] is a JSON string",
    ),
    (
        "limits-a-list",
        {"metadata": {}, "spec": {"containers": [{"resources": {"limits": []}}]}},
        "spec.containers[0].resources.limits is a JSON list",
    ),
    (
        "annotation-not-string",
        {"metadata": {"annotations": {"kube-rdma.io/inject": True}}},
        "metadata.annotations['kube-rdma.io/inject'] is a JSON boolean, expected a string",
    ),
]


@pytest.mark.parametrize(
    ("obj", "problem"), [c[1:] for c in MALFORMED_OBJECTS], ids=[c[0] for c in MALFORMED_OBJECTS]
)
async def test_malformed_pod_objects_are_answered_with_the_uid(
    obj: Json, problem: str, serve: Serve
) -> None:
    request = {**_annotated({"kube-rdma.io/inject": "true"}), "object": obj}
    async with serve(Settings()) as client:
        response = await client.review(request)
    assert response["uid"] == UID
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert response["status"]["reason"] == "BadRequest"
    assert response["status"]["message"].startswith(f"request.object is not a Pod: {problem}")


async def test_a_non_pod_with_a_strange_object_is_allowed(serve: Serve) -> None:
    request = {
        **_pod_request(kind={"group": "apps", "version": "v1", "kind": "Deployment"}),
        "object": "x",
    }
    async with serve(Settings()) as client:
        assert await client.review(request) == {"uid": UID, "allowed": True}


async def test_a_review_without_namespace_is_a_bad_request(serve: Serve) -> None:
    request = _annotated({"kube-rdma.io/inject": "true"})
    request["namespace"] = ""
    del request["object"]["metadata"]["namespace"]
    async with serve(Settings()) as client:
        assert await client.post(review_body(request)) == (
            400,
            {"error": "a Pod CREATE review needs request.namespace"},
        )


MORE_DENIALS = [
    (
        "multus-json-object",
        {"kube-rdma.io/profile": "rails8", "k8s.v1.cni.cncf.io/networks": '{"name": "rail1"}'},
        "k8s.v1.cni.cncf.io/networks must be a JSON list of networks; fix the annotation so "
        "kube-rdma can add the rail networks",
    ),
    (
        "huge-gpu-count",
        {"kube-rdma.io/inject": "true"},
        "'1e999999' is out of range for a Kubernetes quantity; fix the pod's resources",
    ),
]


@pytest.mark.parametrize(
    ("annotations", "message"), [c[1:] for c in MORE_DENIALS], ids=[c[0] for c in MORE_DENIALS]
)
async def test_more_denials(
    annotations: dict[str, str], message: str, serve: Serve, settings: Settings
) -> None:
    request = _annotated(annotations)
    if "huge" in message or "1e999999" in message:
        limits = request["object"]["spec"]["containers"][0]["resources"]["limits"]
        limits["nvidia.com/gpu"] = "1e999999"
    async with serve(settings) as client:
        response = await client.review(request)
    assert response == {
        "uid": UID,
        "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": message},
    }


async def test_a_user_volume_with_a_reserved_name_is_denied(serve: Serve) -> None:
    request = _annotated({"kube-rdma.io/inject": "true"})
    spec = request["object"]["spec"]
    spec["volumes"] = [{"name": "kube-rdma-shm", "configMap": {"name": "scripts"}}]
    spec["containers"][0]["volumeMounts"] = [{"name": "kube-rdma-shm", "mountPath": "/dev/shm"}]
    async with serve(Settings()) as client:
        response = await client.review(request)
    assert response["status"]["message"] == (
        "the pod has its own volume named kube-rdma-shm, a name kube-rdma reserves; rename it"
    )
