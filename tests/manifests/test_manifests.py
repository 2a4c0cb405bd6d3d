"""The deployment manifests, checked against the Kubernetes API schemas and against the code.

Every YAML document under manifests/ must validate strictly (no unknown fields) against each
Kubernetes minor version the README claims (the kustomize builds of every kustomization are
validated the same way in test_kustomizations.py).
The rest pins what the design depends on and what would otherwise drift silently: both webhook
entries fail closed on a narrow scope, the Deployment's args parse with the real CLI and point
at files its volumes provide, the ConfigMap's profiles parse with the real loader, and the
webhook's own pod passes Pod Security "restricted".

For the node agent: the DaemonSet's args parse with the real CLI and read the host's /sys where
it is mounted (read-only), its RBAC is exactly what the real agent calls against a fake
apiserver, it runs on GPU/RDMA nodes only, and its namespace's Pod Security level is the
strictest that admits its hostPath volume, which is the only thing in the pod that needs more
than "restricted".
"""

from __future__ import annotations

import argparse
import re
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from agent.publisher import Agent, AgentSettings
from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import build_parser
from testbed.builders import sysfs_tree
from testbed.fakeapi import FakeApiServer, RecordedRequest
from testbed.kustomize import built, identity, kustomization, needs_kubectl
from webhook.admission import PROTECTED_NAMESPACES
from webhook.profiles import BUILTIN, GidStrategy, NetworkMode, parse_profiles

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
KUSTOMIZE_DIRS = ("webhook", "agent")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# The Kubernetes minor versions kube-rdma claims (README.md, "Compatibility"; docs/compatibility.md
# says what each has), named one by one rather than as the validator's newest schema.
K8S_VERSIONS = ("1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0")
# The kube-scheduler that rdma-scheduler runs unless an overlay sets another: the newest patch
# release of the oldest claimed minor (kube-scheduler may be older than the apiserver, never
# newer). docs/compatibility.md lists the tag of each minor.
KUBE_SCHEDULER_TAG = "v1.33.10"

NAMESPACE = "kube-rdma"
SERVICE = "kube-rdma-webhook"
AGENT = "kube-rdma-agent"  # the DaemonSet, its ServiceAccount, namespace and PriorityClass
TLS_SECRET = "kube-rdma-webhook-tls"
PROFILES_CONFIGMAP = "kube-rdma-profiles"
IMAGE = "ghcr.io/kube-rdma/kube-rdma"
WEBHOOKS = ("namespaces.kube-rdma.io", "pods.kube-rdma.io")
# The system's and kube-rdma's own: the webhook's, the agent's (privileged) and the plan records'.
EXCLUDED_NAMESPACES = ["kube-system", "kube-rdma", "kube-rdma-agent", "kube-rdma-plans"]
ANNOTATION_CONDITION = {
    "name": "opted-in-by-annotation",
    "expression": "has(object.metadata.annotations) && "
    "('kube-rdma.io/inject' in object.metadata.annotations || "
    "'kube-rdma.io/profile' in object.metadata.annotations)",
}

GPU_OR_ANNOTATION_CONDITION = {
    "name": "gpu-or-annotated",
    "expression": "(has(object.metadata.annotations) && "
    "('kube-rdma.io/inject' in object.metadata.annotations || "
    "'kube-rdma.io/profile' in object.metadata.annotations)) || "
    "object.spec.containers.exists(c, has(c.resources) && "
    "((has(c.resources.limits) && 'nvidia.com/gpu' in c.resources.limits) || "
    "(has(c.resources.requests) && 'nvidia.com/gpu' in c.resources.requests))) || "
    "(has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0)",
}


def load_documents() -> list[tuple[str, Json]]:
    """(id, document) for every YAML document under manifests/ but kustomize's own file."""
    documents = []
    for path in sorted(MANIFESTS.rglob("*")):
        if path.suffix not in (".yaml", ".yml") or path.name == "kustomization.yaml":
            continue
        # Overlays of webhook/ (test_cert_manager.py, test_self_provision_manifests.py), the
        # Prometheus operator's objects (test_monitoring.py), the stack's overlays
        # (test_kustomizations.py) and the DRA examples, which need resource.k8s.io/v1 and so
        # Kubernetes 1.34 (test_dra_examples.py).
        top = path.relative_to(MANIFESTS).parts[0]
        if top in ("cert-manager", "self-provision", "monitoring", "overlays", "examples"):
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                name = f"{path.relative_to(MANIFESTS)}:{doc['kind']}/{doc['metadata']['name']}"
                documents.append((name, doc))
    return documents


DOCUMENTS = load_documents()


def find(kind: str, name: str | None = None) -> Json:
    """The one document of `kind` (and `name`)."""
    found = [
        doc
        for _, doc in DOCUMENTS
        if doc["kind"] == kind and (name is None or doc["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def deployment() -> Json:
    return find("Deployment", SERVICE)


def pod_spec() -> Json:
    spec: Json = deployment()["spec"]["template"]["spec"]
    return spec


def container() -> Json:
    containers: list[Json] = pod_spec()["containers"]
    assert [c["name"] for c in containers] == ["webhook"]
    return containers[0]


def webhook(name: str) -> Json:
    entries: list[Json] = find("MutatingWebhookConfiguration", "kube-rdma")["webhooks"]
    assert [w["name"] for w in entries] == list(WEBHOOKS)
    entry: Json = next(w for w in entries if w["name"] == name)
    return entry


def profiles_text() -> str:
    text: str = find("ConfigMap", PROFILES_CONFIGMAP)["data"]["profiles.yaml"]
    return text


def daemonset() -> Json:
    return find("DaemonSet", AGENT)


def agent_pod() -> Json:
    spec: Json = daemonset()["spec"]["template"]["spec"]
    return spec


def agent_container() -> Json:
    containers: list[Json] = agent_pod()["containers"]
    assert [c["name"] for c in containers] == ["agent"]
    return containers[0]


# Each workload's controller, by the directory of manifests that installs it.
WORKLOADS = {"webhook": ("Deployment", SERVICE), "agent": ("DaemonSet", AGENT)}


def workload(directory: str) -> Json:
    return find(*WORKLOADS[directory])


def workload_pod(directory: str) -> Json:
    spec: Json = workload(directory)["spec"]["template"]["spec"]
    return spec


# --- schema ---------------------------------------------------------------------------------


def test_manifests_exist() -> None:
    # manifests/extender and manifests/scheduler: test_scheduler_manifests.py.
    ours = [name for name, _ in DOCUMENTS if name.split("/")[0] in KUSTOMIZE_DIRS]
    assert ours == [
        "agent/daemonset.yaml:DaemonSet/kube-rdma-agent",
        "agent/devicetaintpolicy.yaml:ValidatingAdmissionPolicy/kube-rdma-agent-own-devices",
        "agent/devicetaintpolicy.yaml:ValidatingAdmissionPolicyBinding/kube-rdma-agent-own-devices",
        "agent/networkpolicy.yaml:NetworkPolicy/kube-rdma-agent",
        "agent/nodepolicy.yaml:ValidatingAdmissionPolicy/kube-rdma-agent-own-node",
        "agent/nodepolicy.yaml:ValidatingAdmissionPolicyBinding/kube-rdma-agent-own-node",
        "agent/priorityclass.yaml:PriorityClass/kube-rdma-agent",
        "agent/rbac.yaml:ServiceAccount/kube-rdma-agent",
        "agent/rbac.yaml:ClusterRole/kube-rdma-agent",
        "agent/rbac.yaml:ClusterRoleBinding/kube-rdma-agent",
        "webhook/configmap.yaml:ConfigMap/kube-rdma-profiles",
        "webhook/deployment.yaml:Deployment/kube-rdma-webhook",
        "webhook/mutatingwebhookconfiguration.yaml:MutatingWebhookConfiguration/kube-rdma",
        "webhook/networkpolicy.yaml:NetworkPolicy/kube-rdma-webhook",
        "webhook/poddisruptionbudget.yaml:PodDisruptionBudget/kube-rdma-webhook",
        "webhook/priorityclass.yaml:PriorityClass/kube-rdma-webhook",
        "webhook/rbac.yaml:ServiceAccount/kube-rdma-webhook",
        "webhook/rbac.yaml:ClusterRole/kube-rdma-webhook",
        "webhook/rbac.yaml:ClusterRoleBinding/kube-rdma-webhook",
        "webhook/service.yaml:Service/kube-rdma-webhook",
    ]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("doc", [d for _, d in DOCUMENTS], ids=[n for n, _ in DOCUMENTS])
def test_validates_against_the_kubernetes_schema(doc: Json, version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


# The namespace each directory's namespaced objects live in. Only manifests/namespaces (part of
# the root kustomization) creates it, so deleting one directory never deletes the others' objects.
NAMESPACES = {"webhook": NAMESPACE, "agent": AGENT}
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}


OWN_DOCUMENTS = [(n, d) for n, d in DOCUMENTS if n.split("/")[0] in NAMESPACES]


@pytest.mark.parametrize(("name", "doc"), OWN_DOCUMENTS, ids=[n for n, _ in OWN_DOCUMENTS])
def test_namespaced_objects_live_in_their_directorys_namespace(name: str, doc: Json) -> None:
    namespace = NAMESPACES[name.split("/")[0]]
    assert doc["metadata"].get("namespace") == (
        None if doc["kind"] in CLUSTER_SCOPED else namespace
    )
    assert f"namespaces/namespaces.yaml:Namespace/{namespace}" in dict(DOCUMENTS)


# --- kustomize ------------------------------------------------------------------------------


@pytest.mark.parametrize("directory", KUSTOMIZE_DIRS)
def test_kustomization_lists_every_manifest(directory: str) -> None:
    files = {p.name for p in (MANIFESTS / directory).glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization(directory)["resources"]) == sorted(files)


@pytest.mark.parametrize("directory", KUSTOMIZE_DIRS)
def test_kustomize_image_override_matches_the_workload(directory: str) -> None:
    # One image for both, so one `images:` entry in an overlay of both retags both.
    version = PYPROJECT["project"]["version"]
    assert kustomization(directory)["images"] == [{"name": IMAGE, "newTag": version}]
    images = [c["image"] for c in workload_pod(directory)["containers"]]
    assert images == [f"{IMAGE}:{version}"]


@needs_kubectl
@pytest.mark.parametrize("directory", KUSTOMIZE_DIRS)
def test_kustomize_build_yields_every_document(directory: str) -> None:
    expected = [doc for name, doc in DOCUMENTS if name.startswith(f"{directory}/")]
    assert sorted(identity(d) for d in built(directory)) == sorted(identity(d) for d in expected)


# --- MutatingWebhookConfiguration -----------------------------------------------------------


@pytest.mark.parametrize("name", WEBHOOKS)
def test_webhook_fails_closed_and_is_reinvoked(name: str) -> None:
    entry = webhook(name)
    assert entry["failurePolicy"] == "Fail"
    assert entry["sideEffects"] == "None"
    assert entry["reinvocationPolicy"] == "IfNeeded"
    assert entry["admissionReviewVersions"] == ["v1"]
    assert entry["timeoutSeconds"] <= 10


@pytest.mark.parametrize("name", WEBHOOKS)
def test_webhook_sees_pod_creation_only(name: str) -> None:
    assert webhook(name)["rules"] == [
        {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]


@pytest.mark.parametrize("name", WEBHOOKS)
def test_webhook_calls_the_service(name: str) -> None:
    service_port = find("Service", SERVICE)["spec"]["ports"][0]["port"]
    client = webhook(name)["clientConfig"]
    assert client["service"] == {
        "name": SERVICE,
        "namespace": NAMESPACE,
        "path": "/mutate",
        "port": service_port,
    }
    # Set by `kubectl patch` (docs/deploy.md); in the file it would be reset on every apply.
    assert "caBundle" not in client


@pytest.mark.parametrize("name", WEBHOOKS)
def test_webhook_excludes_system_and_own_namespace(name: str) -> None:
    expressions = webhook(name)["namespaceSelector"]["matchExpressions"]
    assert {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": EXCLUDED_NAMESPACES,
    } in expressions


def test_every_namespace_of_kube_rdma_is_excluded_here_and_in_the_webhook() -> None:
    """Both the configuration and the webhook itself (webhook/admission.py) leave kube-rdma's
    own namespaces alone: a configuration edited by hand still cannot get a pod mutated there."""
    ours = [doc["metadata"]["name"] for _, doc in DOCUMENTS if doc["kind"] == "Namespace"]
    assert ours == ["kube-rdma", "kube-rdma-agent", "kube-rdma-plans"]
    assert set(EXCLUDED_NAMESPACES) == {"kube-system", *ours} == PROTECTED_NAMESPACES


def test_match_conditions() -> None:
    assert webhook("namespaces.kube-rdma.io")["matchConditions"] == [GPU_OR_ANNOTATION_CONDITION]
    assert webhook("pods.kube-rdma.io")["matchConditions"] == [ANNOTATION_CONDITION]


def selects(selector: Json, labels: dict[str, str]) -> bool:
    """A LabelSelector's verdict on `labels`, as the apiserver computes it."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    tests: dict[str, Callable[[Json], bool]] = {
        "In": lambda e: labels.get(e["key"]) in e["values"],
        "NotIn": lambda e: labels.get(e["key"]) not in e["values"],
        "Exists": lambda e: e["key"] in labels,
        "DoesNotExist": lambda e: e["key"] not in labels,
    }
    return all(tests[e["operator"]](e) for e in selector.get("matchExpressions") or [])


# (namespace, its other labels, the webhook entries whose namespaceSelector matches)
NAMESPACE_CASES: list[tuple[str, dict[str, str], list[str]]] = [
    ("team-a", {}, ["pods.kube-rdma.io"]),
    ("ml-training", {"kube-rdma.io/injection": "enabled"}, ["namespaces.kube-rdma.io"]),
    ("ml-paused", {"kube-rdma.io/injection": "disabled"}, ["pods.kube-rdma.io"]),
    ("kube-system", {}, []),
    ("kube-system", {"kube-rdma.io/injection": "enabled"}, []),
    ("kube-rdma", {}, []),
    ("kube-rdma", {"kube-rdma.io/injection": "enabled"}, []),
    ("kube-rdma-agent", {}, []),
    ("kube-rdma-agent", {"kube-rdma.io/injection": "enabled"}, []),
    ("kube-rdma-plans", {}, []),
]


@pytest.mark.parametrize(
    ("namespace", "labels", "expected"),
    NAMESPACE_CASES,
    ids=[f"{n}-{'-'.join(v.values()) or 'unlabelled'}" for n, v, _ in NAMESPACE_CASES],
)
def test_each_namespace_is_reviewed_by_at_most_one_entry(
    namespace: str, labels: dict[str, str], expected: list[str]
) -> None:
    # The apiserver sets kubernetes.io/metadata.name on every namespace.
    all_labels = {"kubernetes.io/metadata.name": namespace, **labels}
    matched = [n for n in WEBHOOKS if selects(webhook(n)["namespaceSelector"], all_labels)]
    assert matched == expected


# --- Deployment -----------------------------------------------------------------------------


def test_deployment_args_parse_with_the_cli() -> None:
    spec = container()
    assert "command" not in spec, "the image's ENTRYPOINT (kube-rdma) must stay in charge"
    args = build_parser().parse_args(spec["args"])
    assert args.command == "webhook"
    assert args.in_cluster is True
    assert args.tls_cert_file == Path("/tls/tls.crt")
    assert args.tls_key_file == Path("/tls/tls.key")
    assert args.profiles == Path("/config/profiles.yaml")
    assert spec["ports"] == [{"name": "https", "containerPort": args.port, "protocol": "TCP"}]


def test_own_namespace_comes_from_the_downward_api() -> None:
    assert container()["env"] == [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
    ]


# (CLI option, volume source kind, object name): each file the webhook reads comes from there.
FILE_SOURCES = [
    ("tls_cert_file", "secret", TLS_SECRET),
    ("tls_key_file", "secret", TLS_SECRET),
    ("profiles", "configMap", PROFILES_CONFIGMAP),
]


@pytest.mark.parametrize(
    ("option", "kind", "source"), FILE_SOURCES, ids=[f[0] for f in FILE_SOURCES]
)
def test_files_the_webhook_reads_are_mounted(option: str, kind: str, source: str) -> None:
    path: Path = getattr(build_parser().parse_args(container()["args"]), option)
    mounts = [m for m in container()["volumeMounts"] if Path(m["mountPath"]) == path.parent]
    assert len(mounts) == 1, f"no single volume mounted at {path.parent}"
    # A whole-directory mount: kubelet never updates files mounted with subPath.
    assert "subPath" not in mounts[0]
    assert mounts[0]["readOnly"] is True
    volume = next(v for v in pod_spec()["volumes"] if v["name"] == mounts[0]["name"])
    name_field = "secretName" if kind == "secret" else "name"
    assert volume[kind][name_field] == source
    assert "items" not in volume[kind]
    if kind == "configMap":
        assert path.name in find("ConfigMap", source)["data"]
    else:  # a kubernetes.io/tls Secret, as `kubectl create secret tls` makes it
        assert path.name in ("tls.crt", "tls.key")


def container_port(port: int | str) -> int:
    """A port number, resolving a named container port."""
    if isinstance(port, int):
        return port
    return int(next(p["containerPort"] for p in container()["ports"] if p["name"] == port))


PROBES = [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")]


@pytest.mark.parametrize(("probe", "path"), PROBES, ids=[p[0] for p in PROBES])
def test_probes_use_https(probe: str, path: str) -> None:
    http_get = container()[probe]["httpGet"]
    assert http_get["path"] == path
    assert http_get["scheme"] == "HTTPS"
    assert container_port(http_get["port"]) == 8443


def test_service_reaches_the_webhook_port() -> None:
    spec = find("Service", SERVICE)["spec"]
    assert [(p["port"], container_port(p["targetPort"])) for p in spec["ports"]] == [(443, 8443)]
    assert spec["selector"].items() <= pod_labels().items()


def pod_labels() -> dict[str, str]:
    labels: dict[str, str] = deployment()["spec"]["template"]["metadata"]["labels"]
    return labels


def test_two_replicas_spread_across_nodes_and_kept_through_drains() -> None:
    spec = deployment()["spec"]
    assert spec["replicas"] == 2
    assert spec["selector"]["matchLabels"] == pod_labels()
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    spread = pod_spec()["topologySpreadConstraints"]
    assert [(s["topologyKey"], s["maxSkew"]) for s in spread] == [("kubernetes.io/hostname", 1)]
    assert spread[0]["labelSelector"]["matchLabels"] == pod_labels()
    budget = find("PodDisruptionBudget", SERVICE)["spec"]
    assert budget["minAvailable"] == 1
    assert budget["selector"]["matchLabels"] == pod_labels()


@pytest.mark.parametrize("directory", KUSTOMIZE_DIRS)
def test_priority_class_is_our_own(directory: str) -> None:
    name = workload_pod(directory)["priorityClassName"]
    assert not name.startswith("system-"), "system classes are admitted in kube-system only"
    priority = find("PriorityClass", name)
    assert 0 < priority["value"] <= 1_000_000_000  # the user-defined range
    assert priority["globalDefault"] is False


def granted_rules(namespace: str, account: str) -> list[Json]:
    """The rules of every role bound to the ServiceAccount; each binding binds it alone."""
    subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
    bindings = [
        doc
        for _, doc in DOCUMENTS
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding") and subject in doc["subjects"]
    ]
    assert all(b["subjects"] == [subject] for b in bindings)
    roles = [find(b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings]
    return [rule for role in roles for rule in role["rules"]]


WEBHOOK_RULES = [
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["deviceclasses", "resourceclaims", "resourceclaimtemplates"],
        "verbs": ["get"],
    },
]
"""What the webhook reads (tests/webhook/dra/test_source.py checks the DRA reads against what
the webhook sends a fake apiserver)."""


def test_rbac_reads_namespaces_and_dra_objects_only() -> None:
    account = pod_spec()["serviceAccountName"]
    assert find("ServiceAccount", account)["metadata"]["namespace"] == NAMESPACE
    assert granted_rules(NAMESPACE, account) == WEBHOOK_RULES


# --- Pod Security ---------------------------------------------------------------------------


def effective(pod: Json, item: Json, field: str) -> Any:
    """A securityContext field as the kubelet applies it: the container's, else the pod's."""
    value = context(item).get(field)
    return value if value is not None else context(pod).get(field)


def context(item: Json) -> Json:
    """The securityContext of a pod spec or a container, empty when it has none."""
    value: Json = item.get("securityContext") or {}
    return value


Check = Callable[[Json, Json], bool]

# What the baseline level lets a container add, set and use (Pod Security Standards, latest).
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
}
BASELINE_SELINUX_TYPES = {
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",  # since 1.31
}
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ping_group_range",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_syncookies",
}
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def baseline_selinux(item: Json) -> bool:
    options: Json = context(item).get("seLinuxOptions") or {}
    return options.get("type", "") in BASELINE_SELINUX_TYPES and not (
        options.get("user") or options.get("role")
    )


# The checks of the Pod Security Standards that a pod spec can fail, by level; each takes the pod
# spec and one container.
BASELINE: dict[str, Check] = {
    "no host namespaces": lambda pod, c: (
        not any(pod.get(f) for f in ("hostNetwork", "hostPID", "hostIPC"))
    ),
    "not privileged": lambda pod, c: not context(c).get("privileged", False),
    "not a Windows HostProcess": lambda pod, c: (
        not (effective(pod, c, "windowsOptions") or {}).get("hostProcess")
    ),
    "capabilities add within the baseline set": lambda pod, c: (
        set(context(c).get("capabilities", {}).get("add", [])) <= BASELINE_CAPABILITIES
    ),
    "no hostPath volumes": lambda pod, c: all("hostPath" not in v for v in pod.get("volumes", [])),
    "no host ports": lambda pod, c: all("hostPort" not in p for p in c.get("ports", [])),
    "AppArmor not Unconfined": lambda pod, c: all(
        (context(item).get("appArmorProfile") or {}).get("type") != "Unconfined"
        for item in (pod, c)
    ),
    "SELinux type within the baseline set, no user or role": lambda pod, c: (
        baseline_selinux(pod) and baseline_selinux(c)
    ),
    "procMount Default": lambda pod, c: context(c).get("procMount", "Default") == "Default",
    "seccompProfile not Unconfined": lambda pod, c: all(
        (context(item).get("seccompProfile") or {}).get("type") != "Unconfined" for item in (pod, c)
    ),
    "safe sysctls only": lambda pod, c: (
        {s["name"] for s in context(pod).get("sysctls", [])} <= SAFE_SYSCTLS
    ),
}
RESTRICTED: dict[str, Check] = {
    **BASELINE,
    "allowed volume types only": lambda pod, c: all(
        (set(v) - {"name"}) <= RESTRICTED_VOLUMES for v in pod.get("volumes", [])
    ),
    "allowPrivilegeEscalation false": lambda pod, c: (
        context(c).get("allowPrivilegeEscalation") is False
    ),
    "runAsNonRoot": lambda pod, c: effective(pod, c, "runAsNonRoot") is True,
    "runAsUser not 0": lambda pod, c: effective(pod, c, "runAsUser") != 0,
    "seccompProfile RuntimeDefault or Localhost": lambda pod, c: (
        (effective(pod, c, "seccompProfile") or {}).get("type") in ("RuntimeDefault", "Localhost")
    ),
    "capabilities drop ALL": lambda pod, c: (
        "ALL" in context(c).get("capabilities", {}).get("drop", [])
    ),
    "capabilities add at most NET_BIND_SERVICE": lambda pod, c: (
        set(context(c).get("capabilities", {}).get("add", [])) <= {"NET_BIND_SERVICE"}
    ),
}
# Least restrictive first.
LEVELS: dict[str, dict[str, Check]] = {
    "privileged": {},
    "baseline": BASELINE,
    "restricted": RESTRICTED,
}
# kube-rdma's own pods go further than restricted.
LOCKED_DOWN: dict[str, Check] = {
    **RESTRICTED,
    "runAsUser set (the kubelet checks non-root by number)": lambda pod, c: (
        effective(pod, c, "runAsUser") not in (0, None)
    ),
    "seccompProfile RuntimeDefault": lambda pod, c: (
        (effective(pod, c, "seccompProfile") or {}).get("type") == "RuntimeDefault"
    ),
    "readOnlyRootFilesystem": lambda pod, c: context(c).get("readOnlyRootFilesystem") is True,
}


def failures(checks: dict[str, Check], pod: Json) -> list[str]:
    """The checks some container of `pod` fails, in the order of `checks`."""
    items = [*pod.get("initContainers", []), *pod["containers"]]
    return [name for name, check in checks.items() if not all(check(pod, c) for c in items)]


@pytest.mark.parametrize("check", LOCKED_DOWN)
def test_webhook_pod_is_restricted(check: str) -> None:
    assert failures({check: LOCKED_DOWN[check]}, pod_spec()) == []


def test_agent_pod_needs_privileged_for_the_sys_volume_only() -> None:
    assert failures(BASELINE, agent_pod()) == ["no hostPath volumes"]
    (init,) = agent_pod()["initContainers"]
    alone = {**agent_pod(), "initContainers": []}
    assert failures(LOCKED_DOWN, alone) == ["no hostPath volumes", "allowed volume types only"]
    init_alone = {**agent_pod(), "initContainers": [], "containers": [init]}
    assert failures(LOCKED_DOWN, init_alone) == [
        "no hostPath volumes",
        "allowed volume types only",
        "runAsNonRoot",
        "runAsUser not 0",
        "runAsUser set (the kubelet checks non-root by number)",
    ]


def test_the_init_container_is_user_0_with_no_capability_at_all() -> None:
    """A VPD file is mode 0600 and root's, and the kernel's vpd_read checks no capability
    (drivers/pci/vpd.c), so the owner's bits let user 0 read it with none."""
    (init,) = agent_pod()["initContainers"]
    assert init["securityContext"] == {
        "runAsUser": 0,
        "runAsGroup": 0,
        "runAsNonRoot": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert "hostUsers" not in agent_pod(), "user 0 must be the host's, the owner of /sys files"


def test_the_init_container_writes_the_file_the_agent_reads() -> None:
    (init,) = agent_pod()["initContainers"]
    assert init["image"] == agent_container()["image"]
    assert "command" not in init
    read_vpd = build_parser().parse_args(init["args"])
    assert (read_vpd.command, read_vpd.verb) == ("agent", "read-vpd")
    agent = agent_args()
    assert read_vpd.out == agent.vpd_file
    assert read_vpd.sysfs_root == agent.sysfs_root
    mounts = {m["name"]: m for m in init["volumeMounts"]}
    assert mounts["vpd"] == {"name": "vpd", "mountPath": str(read_vpd.out.parent)}
    volumes = {v["name"]: v for v in agent_pod()["volumes"]}
    assert volumes["vpd"] == {"name": "vpd", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}


def init_sysfs_parts() -> dict[str, str]:
    """Each part of the host's /sys the init container mounts: its path under --sysfs-root,
    by the host path it comes from."""
    (init,) = agent_pod()["initContainers"]
    root = build_parser().parse_args(init["args"]).sysfs_root
    volumes = {v["name"]: v for v in agent_pod()["volumes"]}
    parts = {}
    for mount in init["volumeMounts"]:
        host_path = volumes[mount["name"]].get("hostPath")
        if host_path is None:
            continue
        assert mount["readOnly"] is True
        assert mount["recursiveReadOnly"] == "IfPossible"
        assert host_path["type"] == "Directory"
        parts[host_path["path"]] = str(Path(mount["mountPath"]).relative_to(root))
    return parts


def test_the_init_container_sees_only_the_parts_of_sys_it_reads() -> None:
    """Not the host's whole /sys: user 0 there could read root-only files anywhere in it
    (firmware tables, EFI variables, debugfs and tracefs under kernel/)."""
    assert init_sysfs_parts() == {
        "/sys/bus/pci/devices": "bus/pci/devices",
        "/sys/devices": "devices",
    }


def test_the_init_container_reads_the_same_vpds_from_those_parts(tmp_path: Path) -> None:
    """bus/pci/devices entries are links into devices/: with both mounted where the host has
    them, read-vpd finds every VPD it finds in the whole of /sys."""
    from agent.vpd_keywords import collect
    from testbed.builders import gb300_tree

    full, narrow = tmp_path / "full", tmp_path / "narrow"
    gb300_tree.gb300_node(full)
    for part in init_sysfs_parts().values():
        (narrow / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(full / part, narrow / part, symlinks=True)
    functions, unreadable = collect(narrow)
    assert functions
    assert not unreadable
    assert (functions, unreadable) == collect(full)


def test_only_the_agent_container_holds_the_token() -> None:
    """The init container runs as user 0: it gets no ServiceAccount token."""
    pod = agent_pod()
    assert pod["automountServiceAccountToken"] is False
    (init,) = pod["initContainers"]
    assert not [m for m in init["volumeMounts"] if "secrets" in m["mountPath"]]
    [api] = [m for m in agent_container()["volumeMounts"] if m["name"] == "api-access"]
    assert api == {
        "name": "api-access",
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        "readOnly": True,
    }
    volume = next(v for v in pod["volumes"] if v["name"] == "api-access")
    sources = volume["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[1]["configMap"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]
    assert sources[2]["downwardAPI"]["items"] == [
        {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
    ]


@pytest.mark.parametrize(
    ("directory", "level"), [("webhook", "restricted"), ("agent", "privileged")]
)
def test_namespace_enforces_the_strictest_level_that_admits_its_pod(
    directory: str, level: str
) -> None:
    labels = find("Namespace", NAMESPACES[directory])["metadata"]["labels"]
    modes = ("enforce", "warn", "audit")
    assert [labels[f"pod-security.kubernetes.io/{mode}"] for mode in modes] == [level] * 3
    admitting = [
        name for name, checks in LEVELS.items() if not failures(checks, workload_pod(directory))
    ]
    assert admitting[-1] == level


def test_privileged_namespace_holds_the_agent_only() -> None:
    inside = sorted(
        (doc["kind"], doc["metadata"]["name"])
        for _, doc in DOCUMENTS
        if doc["metadata"].get("namespace") == AGENT
    )
    assert inside == [("DaemonSet", AGENT), ("NetworkPolicy", AGENT), ("ServiceAccount", AGENT)]


APISERVER_ONLY = [{"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]}]


@pytest.mark.parametrize(
    ("name", "workload", "ingress"),
    [
        ("webhook", "webhook/deployment.yaml", [{"ports": [{"port": 8443, "protocol": "TCP"}]}]),
        ("agent", "agent/daemonset.yaml", []),
    ],
)
def test_network_policies_open_the_served_port_and_the_apiserver_only(
    name: str, workload: str, ingress: list[Json]
) -> None:
    policy = dict(DOCUMENTS)[f"{name}/networkpolicy.yaml:NetworkPolicy/kube-rdma-{name}"]
    pod = next(d for n, d in DOCUMENTS if n.startswith(workload))["spec"]["template"]
    assert (
        policy["metadata"]["namespace"]
        == next(d for n, d in DOCUMENTS if n.startswith(workload))["metadata"]["namespace"]
    )
    assert policy["spec"]["podSelector"] == {"matchLabels": pod["metadata"]["labels"]}
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["ingress"] == ingress
    assert policy["spec"]["egress"] == APISERVER_ONLY
    served = [p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])]
    assert [p["port"] for rule in ingress for p in rule["ports"]] == served


# --- node agent -----------------------------------------------------------------------------


def agent_args() -> argparse.Namespace:
    spec = agent_container()
    assert "command" not in spec, "the image's ENTRYPOINT (kube-rdma) must stay in charge"
    return build_parser().parse_args(spec["args"])


def test_agent_args_parse_with_the_cli() -> None:
    args = agent_args()
    assert (args.command, args.verb) == ("agent", "run")
    assert args.in_cluster is True
    assert args.kubeconfig is None
    assert args.topo_file is None  # sysfs only: the image has no nvidia-smi
    assert args.interval == 30.0
    assert args.taint_unhealthy is False  # opt-in, in an overlay


def test_agent_reads_the_hosts_sys_read_only_where_it_is_mounted() -> None:
    assert agent_container()["volumeMounts"] == [
        {
            "name": "sys",
            "mountPath": str(agent_args().sysfs_root),
            "readOnly": True,
            "recursiveReadOnly": "IfPossible",
        },
        {"name": "vpd", "mountPath": str(agent_args().vpd_file.parent), "readOnly": True},
        {
            "name": "api-access",
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": True,
        },
    ]
    assert agent_pod()["volumes"][0] == {
        "name": "sys",
        "hostPath": {"path": "/sys", "type": "Directory"},
    }
    assert [v["name"] for v in agent_pod()["volumes"]] == [
        "sys",
        "sys-bus-pci-devices",
        "sys-devices",
        "api-access",
        "vpd",
    ]


def test_agent_node_name_comes_from_the_downward_api(monkeypatch: pytest.MonkeyPatch) -> None:
    assert agent_container()["env"] == [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    ]
    monkeypatch.setenv("NODE_NAME", "gpu-node-7")
    assert agent_args().node_name == "gpu-node-7"


# HTTP method to RBAC verb, for a request that names one object.
VERBS = {"GET": "get", "PATCH": "patch", "PUT": "update", "POST": "create", "DELETE": "delete"}


def authorized_as(request: RecordedRequest) -> tuple[str, str, str]:
    """(apiGroup, resource, verb) as the apiserver authorizes a request for a cluster-scoped
    core/v1 resource: a PATCH of `/api/v1/nodes/n/status` is `patch` on `nodes/status`."""
    parts = request.path.strip("/").split("/")
    assert parts[:2] == ["api", "v1"], request.path
    resource = "/".join(parts[2::2])  # nodes, nodes/status
    verb = VERBS[request.method]
    if request.method == "GET" and len(parts) == 3:
        verb = "watch" if request.watch else "list"
    return "", resource, verb


async def test_agent_rbac_is_exactly_what_the_agent_calls(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path
) -> None:
    node = "gpu-node-1"
    fake_api.create("nodes", {"metadata": {"name": node}})
    args = agent_args()
    up, down = tmp_path / "up", tmp_path / "down"
    sysfs_tree.hgx_8gpu_8nic(up)
    sysfs_tree.hgx_8gpu_8nic(down, down={0})
    dead = tmp_path / "dead"
    sysfs_tree.hgx_8gpu_8nic(dead, down=set(range(8)))
    # A first start, a restart after a link went down, then one with --taint-unhealthy after
    # every link went down.
    for root, taint_unhealthy in ((up, False), (down, False), (dead, True)):
        settings = AgentSettings(
            node_name=node,
            sysfs_root=root,
            interval=args.interval,
            recover_after=args.recover_after,
            taint_unhealthy=taint_unhealthy,
        )
        await Agent(core_v1, settings).step()
    assert fake_api.get("nodes", node)["spec"]["taints"] == [
        {"key": "kube-rdma.io/rdma-unhealthy", "effect": "NoSchedule"}
    ]
    methods = ("GET", "PATCH", "GET", "PATCH", "GET", "PATCH", "GET", "PATCH")
    assert [(r.method, r.path) for r in fake_api.requests] == [
        (method, f"/api/v1/nodes/{node}") for method in methods
    ]
    called = sorted({authorized_as(r) for r in fake_api.requests})
    assert called == [("", "nodes", "get"), ("", "nodes", "patch")]
    account = agent_pod()["serviceAccountName"]
    assert find("ServiceAccount", account)["metadata"]["namespace"] == AGENT
    assert granted_rules(AGENT, account)[0] == {
        "apiGroups": [""],
        "resources": ["nodes"],
        "verbs": ["get", "patch"],
    }


async def test_agent_dra_rbac_is_exactly_what_its_device_taints_call(
    fake_api: FakeApiServer, core_v1: Any, tmp_path: Path
) -> None:
    """On a DRA node (--dra-device-taints): a NIC's port goes down, its device is tainted, the
    taint's reason changes as it recovers, and the rule is deleted once it is healthy."""
    from kubernetes_asyncio import client

    from agent.dra_taints import DeviceTaints
    from agent.sysfs import scan
    from testbed.builders.dra_slices import hgx_dranet_slice
    from testbed.fakeapi import device_taint_rules
    from tests.manifests.test_scheduler_manifests import authorized_as as api_call
    from tests.manifests.test_scheduler_manifests import discovery

    node = "gpu-node-1"
    fake_api.create("nodes", {"metadata": {"name": node}})
    fake_api.install("devicetaintrules", device_taint_rules("1.37"))
    fake_api.create("resourceslices", hgx_dranet_slice(node))
    tree = sysfs_tree.hgx_8gpu_8nic(tmp_path)
    settings = AgentSettings(node_name=node, sysfs_root=tmp_path, recover_after=2)
    custom = client.CustomObjectsApi(core_v1.api_client)
    taints = DeviceTaints(custom, node, "on")
    agent = Agent(core_v1, settings, lambda _: scan(tmp_path), device_taints=taints)
    tree.port_state("mlx5_3", 1, up=False)
    await agent.step()
    tree.port_state("mlx5_3", 1, up=True)
    await agent.step()
    await agent.step()
    assert fake_api.objects("devicetaintrules") == []
    called = sorted(
        {
            api_call(r)
            for r in fake_api.requests
            if r.path.startswith("/apis/") and not discovery(r) and len(r.path.split("/")) > 4
        }
    )
    assert called == [
        ("resource.k8s.io", "devicetaintrules", "create"),
        ("resource.k8s.io", "devicetaintrules", "delete"),
        ("resource.k8s.io", "devicetaintrules", "list"),
        ("resource.k8s.io", "devicetaintrules", "patch"),
        ("resource.k8s.io", "resourceslices", "list"),
    ]
    assert granted_rules(AGENT, agent_pod()["serviceAccountName"])[1:] == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["devicetaintrules"],
            "verbs": ["list", "create", "patch", "delete"],
        },
    ]


def tolerated(tolerations: list[Json], taint: Json) -> bool:
    """Whether one of `tolerations` tolerates `taint`, by the scheduler's rule."""

    def matches(toleration: Json) -> bool:
        if toleration.get("effect") not in (None, "", taint["effect"]):
            return False
        if toleration.get("operator", "Equal") == "Exists":
            return toleration.get("key") in (None, "", taint["key"])
        return (toleration.get("key"), toleration.get("value", "")) == (
            taint["key"],
            taint.get("value", ""),
        )

    return any(matches(t) for t in tolerations)


def agent_runs_on(labels: dict[str, str], taints: list[Json]) -> bool:
    """Whether the DaemonSet places a pod on a node with these labels and taints."""
    pod = agent_pod()
    affinity = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    terms = affinity["nodeSelectorTerms"]  # ORed
    affine = any(selects({"matchExpressions": t["matchExpressions"]}, labels) for t in terms)
    repelling = [t for t in taints if t["effect"] in ("NoSchedule", "NoExecute")]
    return affine and all(tolerated(pod["tolerations"], t) for t in repelling)


GPU = {"nvidia.com/gpu.present": "true"}
MELLANOX = {"feature.node.kubernetes.io/pci-15b3.present": "true"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
RDMA_UNHEALTHY = {"key": "kube-rdma.io/rdma-unhealthy", "effect": "NoSchedule"}
# (case, node labels, node taints, whether the agent runs there)
PLACEMENT_CASES: list[tuple[str, dict[str, str], list[Json], bool]] = [
    ("gpu", GPU, [], True),
    ("mellanox-nic-only", MELLANOX, [], True),
    ("gpu-and-nic", {**GPU, **MELLANOX}, [], True),
    ("gpu-tainted", GPU, [GPU_TAINT], True),
    ("gpu-tainted-no-value", GPU, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], True),
    ("gpu-prefer-no-schedule", GPU, [{"key": "dedicated", "effect": "PreferNoSchedule"}], True),
    ("gpu-rdma-unhealthy", GPU, [GPU_TAINT, RDMA_UNHEALTHY], True),  # the agent's own taint
    ("cpu", {"kubernetes.io/os": "linux"}, [], False),
    ("gpu-label-false", {"nvidia.com/gpu.present": "false"}, [], False),
    ("gpu-taint-without-gpu-label", {}, [GPU_TAINT], False),
    (
        "gpu-control-plane",
        GPU,
        [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
        False,
    ),
    (
        "gpu-in-maintenance",
        GPU,
        [{"key": "example.com/maintenance", "value": "true", "effect": "NoExecute"}],
        False,
    ),
]


@pytest.mark.parametrize(
    ("labels", "taints", "expected"),
    [c[1:] for c in PLACEMENT_CASES],
    ids=[c[0] for c in PLACEMENT_CASES],
)
def test_agent_runs_on_gpu_and_rdma_nodes_only(
    labels: dict[str, str], taints: list[Json], expected: bool
) -> None:
    assert agent_runs_on(labels, taints) is expected


def test_agent_tolerates_named_taints_only() -> None:
    assert all(t.get("key") for t in agent_pod()["tolerations"]), "no blanket toleration"


def test_agent_rollout_replaces_a_tenth_of_the_nodes_at_a_time() -> None:
    spec = daemonset()["spec"]
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": 0},
    }
    # No readiness probe, so Ready means started: an agent that exits during start-up must be
    # caught before the rollout moves on.
    assert "readinessProbe" not in agent_container()
    assert spec["minReadySeconds"] >= 10


def test_agent_never_preempts_training_pods() -> None:
    priority = find("PriorityClass", agent_pod()["priorityClassName"])
    assert priority["preemptionPolicy"] == "Never"


def test_agent_pods_are_never_sent_to_the_webhook() -> None:
    # The webhook fails closed (failurePolicy Fail): the agent must not depend on it.
    labels = find("Namespace", AGENT)["metadata"]["labels"]
    all_labels = {"kubernetes.io/metadata.name": AGENT, **labels}
    matched = [n for n in WEBHOOKS if selects(webhook(n)["namespaceSelector"], all_labels)]
    # Not even an annotated pod: an init container injected there would run in the privileged
    # namespace, beside the host's /sys.
    assert matched == []
    annotations = daemonset()["spec"]["template"]["metadata"].get("annotations", {})
    assert not {"kube-rdma.io/inject", "kube-rdma.io/profile"} & annotations.keys()


# --- profiles ConfigMap ---------------------------------------------------------------------


def test_profiles_are_the_builtin_written_out() -> None:
    assert parse_profiles(profiles_text(), "ConfigMap kube-rdma-profiles") == BUILTIN


def uncomment_example(text: str, first_line: str) -> str:
    """`text` with the commented-out block that starts at `first_line` uncommented."""
    lines = text.splitlines()
    start = lines.index(first_line)
    indent = first_line[: first_line.index("#")]
    block = []
    for line in lines[start:]:
        if not line.startswith(indent + "#"):
            break
        block.append(indent + line.removeprefix(indent + "#").removeprefix(" "))
    return "\n".join([*lines[:start], *block, *lines[start + len(block) :]]) + "\n"


def test_commented_multi_rail_example_is_valid() -> None:
    text = uncomment_example(profiles_text(), "  # multi-rail:")
    profile = parse_profiles(text, "multi-rail example").profiles["multi-rail"]
    rails = range(1, 9)
    assert profile.network.mode is NetworkMode.MACVLAN
    assert profile.network.networks == tuple(f"kube-rdma/rail{i}" for i in rails)
    assert profile.network.per_gpu is True
    assert profile.resources.per_rail == tuple(f"rdma/hca{i}" for i in rails)
    assert profile.resources.fixed is None
    assert profile.devices.value == "plugin"
    assert profile.gid.strategy is GidStrategy.AUTO
    assert profile.gid.addr_range == "10.100.0.0/16"


# --- Dockerfile -----------------------------------------------------------------------------


def dockerfile(instruction: str) -> list[str]:
    """The arguments of every `instruction` line in manifests/Dockerfile."""
    text = (MANIFESTS / "Dockerfile").read_text()
    return re.findall(rf"^{instruction}\s+(.+)$", text, flags=re.MULTILINE)


@pytest.mark.parametrize("directory", KUSTOMIZE_DIRS)
def test_image_runs_the_console_script_as_the_pods_user(directory: str) -> None:
    assert dockerfile("ENTRYPOINT") == ['["kube-rdma"]']
    assert "kube-rdma" in PYPROJECT["project"]["scripts"]
    security = context(workload_pod(directory))
    assert dockerfile("USER") == [f"{security['runAsUser']}:{security['runAsGroup']}"]
    assert security["runAsUser"] != 0


def test_image_copies_every_package() -> None:
    packages = [
        p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    ]
    copied = [line.split()[0].rstrip("/") for line in dockerfile("COPY")]
    sources = [c for c in copied if not c.startswith("--from") and "." not in c]
    assert sorted(packages) == sorted(sources)
