"""Objects in full, as a list or watch delivers them: what the apiserver, the kubelet and the
controllers add to what a workload asked for.

A pod gets the defaults admission fills in (service account, DNS policy, tolerations, the
projected API token volume), container statuses and the kubelet's five conditions, and one
managedFields entry per writer (its controller, the kubelet, Multus for the network status); a
node gets its images, daemon endpoints and managedFields. This is what a cache that keeps whole
objects pays for, so a memory figure measured without it would flatter such a cache.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import orjson

from kube_rdma.core.objects import Json
from testbed.clustergen.spec import MULTUS_NETWORKS

NETWORK_STATUS = "k8s.v1.cni.cncf.io/network-status"
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
CONDITIONS = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)
TRAINING_ENV = ("PYTHONUNBUFFERED", "MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE", "RANK")
NODE_IMAGES = (
    "nvcr.io/nvidia/pytorch:24.05-py3",
    "nvcr.io/nvidia/pytorch:24.03-py3",
    "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.6-3.4.2-ubuntu22.04",
    "nvcr.io/nvidia/k8s-device-plugin:v0.15.0",
    "nvcr.io/nvidia/gpu-feature-discovery:v0.8.2",
    "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
    "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.1.0",
    "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.4.0",
    "ghcr.io/kube-rdma/kube-rdma:0.1.0",
    "registry.k8s.io/kube-proxy:v1.30.2",
    "registry.k8s.io/pause:3.9",
    "quay.io/prometheus/node-exporter:v1.8.1",
    "docker.io/fluent/fluent-bit:3.0.7",
    "registry.example.com/llm/tokenizer:2.4",
    "registry.example.com/vision/loader:1.9",
)
MERGE_KEYS = ("name", "type", "containerPort", "mountPath", "key")


def served_pod(pod: Json, rng: random.Random) -> Json:
    """`pod` with the fields the apiserver, kubelet, Multus and its controller add."""
    meta, spec, status = dict(pod["metadata"]), dict(pod["spec"]), dict(pod["status"])
    created = str(meta["creationTimestamp"])
    token = f"kube-api-access-{_digest(meta['uid'])[:5]}"
    spec["containers"] = [_container(c, token, _env(pod)) for c in spec["containers"]]
    spec.update(_pod_defaults(spec, token))
    if MULTUS_NETWORKS in (meta.get("annotations") or {}) and spec.get("nodeName"):
        meta["annotations"] = {**meta["annotations"], NETWORK_STATUS: _network_status(pod, rng)}
    if spec.get("nodeName"):
        status = _running_status(pod, status, created)
    asked = {"metadata": {k: meta[k] for k in ("labels", "ownerReferences") if k in meta}}
    writers: list[tuple[str, Json, str | None]] = [
        (_controller(pod), {**asked, "spec": pod["spec"]}, None)
    ]
    if NETWORK_STATUS in (meta.get("annotations") or {}):
        status_note: Json = {"metadata": {"annotations": {NETWORK_STATUS: ""}}}
        writers.append(("multus-daemon", status_note, "status"))
    writers.append(("kubelet", {"status": status}, "status"))
    meta["managedFields"] = [_managed(m, fields, created, sub) for m, fields, sub in writers]
    return {**pod, "metadata": meta, "spec": spec, "status": status}


def served_node(node: Json) -> Json:
    """`node` with its images, daemon endpoints and the managedFields of its writers."""
    meta, status = dict(node["metadata"]), dict(node["status"])
    created = str(meta["creationTimestamp"])
    status["images"] = [_image(name) for name in NODE_IMAGES]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    annotations = meta.get("annotations") or {}
    writers: list[tuple[str, Json, str | None]] = [
        ("kubelet", {"metadata": {"labels": meta["labels"]}}, None),
        ("kube-controller-manager", {"spec": node["spec"]}, None),
        ("kubelet", {"status": status}, "status"),
    ]
    if any(key.startswith("kube-rdma.io/") for key in annotations):
        ours = {k: v for k, v in annotations.items() if k.startswith("kube-rdma.io/")}
        writers.append(("kube-rdma-agent", {"metadata": {"annotations": ours}}, None))
    meta["managedFields"] = [_managed(m, fields, created, sub) for m, fields, sub in writers]
    return {**node, "metadata": meta, "status": status}


def fields_v1(value: Any) -> Json:
    """The fieldsV1 set of the fields `value` holds: `f:` per map key, `k:` per keyed list
    item, `.` for a map owned as a whole; atomic lists and scalars are leaves."""
    if isinstance(value, dict):
        return {".": {}, **{f"f:{key}": fields_v1(item) for key, item in value.items()}}
    if isinstance(value, list) and value and all(_merge_key(i) for i in value):
        return {_merge_key(item): fields_v1(item) for item in value}
    return {}


def _merge_key(item: Any) -> str:
    if not isinstance(item, dict):
        return ""
    key = next((k for k in MERGE_KEYS if k in item), None)
    return "" if key is None else "k:" + orjson.dumps({key: item[key]}).decode()


def _managed(manager: str, fields: Json, time: str, subresource: str | None) -> Json:
    entry: Json = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": {k: v for k, v in fields_v1(fields).items() if k != "."},
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _controller(pod: Json) -> str:
    kind = (pod["metadata"].get("ownerReferences") or [{}])[0].get("kind")
    return "training-operator" if kind == "PyTorchJob" else "kube-controller-manager"


def _pod_defaults(spec: Json, token: str) -> Json:
    projected = {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {
                "configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
    }
    tolerations = [
        {
            "key": f"node.kubernetes.io/{taint}",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }
        for taint in ("not-ready", "unreachable")
    ]
    return {
        "volumes": [*(spec.get("volumes") or []), {"name": token, "projected": projected}],
        "restartPolicy": spec.get("restartPolicy", "Always"),
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {},
        "schedulerName": spec.get("schedulerName", "default-scheduler"),
        "tolerations": [*(spec.get("tolerations") or []), *tolerations],
        "priority": 2000001000 if spec.get("priorityClassName") else 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def _env(pod: Json) -> list[Json]:
    """The training operator's rendezvous variables, for training pods."""
    labels = pod["metadata"].get("labels") or {}
    job = labels.get("training.kubeflow.org/job-name")
    if job is None:
        return []
    values = ("1", "23456", f"{job}-master-0", "16", labels["training.kubeflow.org/replica-index"])
    return [
        {"name": name, "value": value} for name, value in zip(TRAINING_ENV, values, strict=True)
    ]


def _container(container: Json, token: str, env: list[Json]) -> Json:
    mount = {"name": token, "readOnly": True, "mountPath": TOKEN_PATH}
    served = {
        **container,
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [*(container.get("volumeMounts") or []), mount],
    }
    if env:
        served["env"] = [*(container.get("env") or []), *env]
        served["ports"] = [{"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}]
    return served


def _running_status(pod: Json, status: Json, created: str) -> Json:
    ready = "True" if status["phase"] == "Running" else "False"
    conditions: list[Json] = [
        {"type": kind, "status": "True" if kind in ("Initialized", "PodScheduled") else ready}
        for kind in CONDITIONS
    ]
    for condition in conditions:
        condition.update({"lastProbeTime": None, "lastTransitionTime": created})
    statuses = [_container_status(c, pod, status) for c in pod["spec"]["containers"]]
    return {
        **status,
        "conditions": conditions,
        "containerStatuses": statuses,
        "hostIPs": [{"ip": status["hostIP"]}],
        "podIPs": [{"ip": status["podIP"]}],
    }


def _container_status(container: Json, pod: Json, status: Json) -> Json:
    running = status["phase"] == "Running"
    started = str(status.get("startTime"))
    state = (
        {"running": {"startedAt": started}}
        if running
        else {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": started,
                "finishedAt": started,
            }
        }
    )
    return {
        "name": container["name"],
        "state": state,
        "lastState": {},
        "ready": running,
        "restartCount": 0,
        "image": container["image"],
        "imageID": f"{container['image'].partition(':')[0]}@sha256:{_digest(container['image'])}",
        "containerID": f"containerd://{_digest(pod['metadata']['uid'] + container['name'])}",
        "started": running,
    }


def _network_status(pod: Json, rng: random.Random) -> str:
    status = pod["status"]
    entries = [
        {
            "name": "k8s-pod-network",
            "interface": "eth0",
            "ips": [status["podIP"]],
            "default": True,
            "dns": {},
        }
    ]
    for number, network in enumerate(pod["metadata"]["annotations"][MULTUS_NETWORKS].split(","), 1):
        mac = ":".join(f"{rng.randrange(256):02x}" for _ in range(6))
        address = f"10.{number}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        entries.append(
            {"name": network, "interface": f"net{number}", "ips": [address], "mac": mac, "dns": {}}
        )
    return orjson.dumps(entries, option=orjson.OPT_INDENT_2).decode()


def _image(name: str) -> Json:
    repository = name.partition(":")[0]
    return {
        "names": [f"{repository}@sha256:{_digest(name)}", name],
        "sizeBytes": 100_000_000 + len(name) * 7_919_111,
    }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
