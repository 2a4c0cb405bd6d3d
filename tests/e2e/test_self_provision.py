"""Certificate self-provisioning against the real MutatingWebhookConfiguration."""

from __future__ import annotations

import base64
import socket
import ssl
import tempfile
import time

from testbed.controlplane.components import NAMESPACE, WEBHOOK_ACCOUNT, Stack
from testbed.controlplane.pki import kube_rdma_command
from testbed.controlplane.processes import Process
from testbed.controlplane.rest import JSON_PATCH, Rest
from testbed.net import free_port, listening

CONFIGURATION = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kube-rdma"
SECRET = f"/api/v1/namespaces/{NAMESPACE}/secrets/kube-rdma-webhook-tls"
SERVICE_NAME = f"kube-rdma-webhook.{NAMESPACE}.svc"


def bundles(api: Rest) -> list[str]:
    return [w["clientConfig"]["caBundle"] for w in api.get(CONFIGURATION)["webhooks"]]


def restore(api: Rest, original: list[str]) -> None:
    patch = [
        {"op": "replace", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle}
        for i, bundle in enumerate(original)
    ]
    api.patch(CONFIGURATION, patch, JSON_PATCH)


def handshake(port: int, ca_pem: bytes) -> str:
    """The subject the webhook's certificate was verified for, by the caBundle alone."""
    with tempfile.NamedTemporaryFile(suffix=".crt") as ca:
        ca.write(ca_pem)
        ca.flush()
        context = ssl.create_default_context(cafile=ca.name)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=SERVICE_NAME) as tls,
    ):
        return str(tls.version())


def test_self_provisioning_sets_the_real_configurations_ca_bundle(stack: Stack, api: Rest) -> None:
    original = bundles(api)
    port = free_port()
    kubeconfig = stack.plane.kubeconfig_for(*WEBHOOK_ACCOUNT)
    webhook = Process(
        "webhook-self-provision",
        [
            *kube_rdma_command(), "webhook", "--self-provision",
            "--own-namespace", NAMESPACE, "--kubeconfig", str(kubeconfig),
            "--host", "127.0.0.1", "--port", str(port),
        ],
        stack.folder / "logs" / "webhook-self-provision.log",
    ).start()  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (api.exists(SECRET) and bundles(api) != original and listening(port)):
            assert webhook.alive, webhook.tail()
            assert time.monotonic() < deadline, webhook.tail()
            time.sleep(0.2)
        ca_pem = base64.b64decode(api.get(SECRET)["data"]["ca.crt"])
        expected = base64.b64encode(ca_pem).decode()
        deadline = time.monotonic() + 30
        while bundles(api) != [expected, expected]:
            assert time.monotonic() < deadline, (bundles(api), webhook.tail())
            time.sleep(0.2)
        assert handshake(port, ca_pem) in ("TLSv1.2", "TLSv1.3")
    finally:
        webhook.stop()
        restore(api, original)
