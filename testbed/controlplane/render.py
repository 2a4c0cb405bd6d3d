"""kube-rdma's manifests as a 1.20 control plane takes them.

The objects are read from manifests/ and changed only where 1.20 lacks what they use:
- KubeSchedulerConfiguration exists only as `kubescheduler.config.k8s.io/v1beta1` (v1: 1.25);
- webhooks have no `matchConditions` (1.28): without them the second webhook entry is asked
  about every pod outside labelled namespaces, and the webhook's own opt-in decision is what
  leaves them alone;
- namespaces get no automatic `kubernetes.io/metadata.name` label (1.21), which both webhook
  entries select on: the tests add it to every namespace they create;
- no Services route to local processes: the webhook is called by URL on the loopback, and the
  extender's urlPrefix names the port it listens on.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

from kube_rdma.core.objects import Json

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
NAME_LABEL = "kubernetes.io/metadata.name"
BUILT_IN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

RBAC_FILES = (
    "webhook/rbac.yaml",
    "self-provision/rbac.yaml",
    "agent/rbac.yaml",
    "extender/rbac.yaml",
    "scheduler/rbac.yaml",
)
CONFIGMAP_FILES = (
    "webhook/configmap.yaml",
    "extender/configmap.yaml",
    "scheduler/configmap.yaml",
)


def load(relative: str) -> list[Json]:
    with (MANIFESTS / relative).open() as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def with_name_label(namespace: Json) -> Json:
    """A Namespace as 1.21+ stores it: labelled with its own name."""
    result = copy.deepcopy(namespace)
    result["metadata"].setdefault("labels", {})[NAME_LABEL] = result["metadata"]["name"]
    return result


def name_label_patch(name: str) -> Json:
    """The merge patch that labels an existing namespace with its name."""
    return {"metadata": {"labels": {NAME_LABEL: name}}}


def namespaces() -> list[Json]:
    return [with_name_label(ns) for ns in load("namespaces/namespaces.yaml")]


def rbac() -> list[Json]:
    return [obj for relative in RBAC_FILES for obj in load(relative)]


def configmaps() -> dict[str, Json]:
    return {obj["metadata"]["name"]: obj for f in CONFIGMAP_FILES for obj in load(f)}


def webhook_configuration(url: str, ca_bundle: bytes) -> Json:
    """The MutatingWebhookConfiguration, each entry calling `url` and trusting `ca_bundle`."""
    (config,) = load("webhook/mutatingwebhookconfiguration.yaml")
    for webhook in config["webhooks"]:
        webhook.pop("matchConditions", None)
        webhook["clientConfig"] = {"url": url, "caBundle": base64.b64encode(ca_bundle).decode()}
    result: Json = config
    return result


def scheduler_configuration(extender_port: int, kubeconfig: Path) -> str:
    """rdma-scheduler's configuration as v1beta1, with the extender on `extender_port`."""
    text = configmaps()["rdma-scheduler-config"]["data"]["config.yaml"]
    config: dict[str, Any] = yaml.safe_load(text)
    config["apiVersion"] = "kubescheduler.config.k8s.io/v1beta1"
    config["clientConnection"] = {"kubeconfig": str(kubeconfig)}
    # 1.20 serves /healthz and /metrics on plain HTTP at 0.0.0.0:10251 unless told otherwise:
    # the secure port (a flag) is enough here.
    config["healthzBindAddress"] = ""
    config["metricsBindAddress"] = ""
    for extender in config["extenders"]:
        extender["urlPrefix"] = f"http://127.0.0.1:{extender_port}"
    return yaml.safe_dump(config)
