"""The deployment manifests, checked against the Kubernetes API schemas and against the code.

Every YAML document under manifests/ must validate strictly (no unknown fields) against the
oldest Kubernetes version kube-rdma supports and the newest schema kubernetes-validate ships.
The rest pins what the design depends on and what would otherwise drift silently: both webhook
entries fail closed on a narrow scope, the Deployment's args parse with the real CLI and point
at files its volumes provide, the ConfigMap's profiles parse with the real loader, and the
webhook's own pod passes Pod Security "restricted".
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from webhook.cli import build_parser
from webhook.profiles import BUILTIN, GidStrategy, NetworkMode, parse_profiles

Json = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
KUSTOMIZE_DIR = MANIFESTS / "webhook"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# The first release with matchConditions GA, and the newest schema shipped.
K8S_VERSIONS = ("1.30.0", kubernetes_validate.utils.latest_version())

NAMESPACE = "kube-rdma"
SERVICE = "kube-rdma-webhook"
TLS_SECRET = "kube-rdma-webhook-tls"
PROFILES_CONFIGMAP = "kube-rdma-profiles"
IMAGE = "ghcr.io/kube-rdma/kube-rdma"
WEBHOOKS = ("namespaces.kube-rdma.io", "pods.kube-rdma.io")
EXCLUDED_NAMESPACES = ["kube-system", "kube-rdma"]
ANNOTATION_CONDITION = {
    "name": "opted-in-by-annotation",
    "expression": "has(object.metadata.annotations) && "
    "('kube-rdma.io/inject' in object.metadata.annotations || "
    "'kube-rdma.io/profile' in object.metadata.annotations)",
}


def load_documents() -> list[tuple[str, Json]]:
    """(id, document) for every YAML document under manifests/ but kustomize's own file."""
    documents = []
    for path in sorted(MANIFESTS.rglob("*")):
        if path.suffix not in (".yaml", ".yml") or path.name == "kustomization.yaml":
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


# --- schema ---------------------------------------------------------------------------------


def test_manifests_exist() -> None:
    kinds = sorted(doc["kind"] for _, doc in DOCUMENTS)
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "MutatingWebhookConfiguration",
        "Namespace",
        "PodDisruptionBudget",
        "PriorityClass",
        "Service",
        "ServiceAccount",
    ]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("doc", [d for _, d in DOCUMENTS], ids=[n for n, _ in DOCUMENTS])
def test_validates_against_the_kubernetes_schema(doc: Json, version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("doc", [d for _, d in DOCUMENTS], ids=[n for n, _ in DOCUMENTS])
def test_namespaced_objects_live_in_the_webhook_namespace(doc: Json) -> None:
    cluster_scoped = {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "PriorityClass",
        "MutatingWebhookConfiguration",
    }
    assert doc["metadata"].get("namespace") == (
        None if doc["kind"] in cluster_scoped else NAMESPACE
    )


# --- kustomize ------------------------------------------------------------------------------


def kustomization() -> Json:
    data: Json = yaml.safe_load((KUSTOMIZE_DIR / "kustomization.yaml").read_text())
    return data


def test_kustomization_lists_every_manifest() -> None:
    files = {p.name for p in KUSTOMIZE_DIR.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization()["resources"]) == sorted(files)


def test_kustomize_image_override_matches_the_deployment() -> None:
    version = PYPROJECT["project"]["version"]
    assert kustomization()["images"] == [{"name": IMAGE, "newTag": version}]
    assert container()["image"] == f"{IMAGE}:{version}"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_build_yields_every_document() -> None:
    result = subprocess.run(
        ["kubectl", "kustomize", str(KUSTOMIZE_DIR)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    built = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    expected = [doc for name, doc in DOCUMENTS if name.startswith("webhook/")]
    assert sorted(_identity(d) for d in built) == sorted(_identity(d) for d in expected)


def _identity(doc: Json) -> tuple[str, str, str]:
    return doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"]


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


def test_match_conditions() -> None:
    assert "matchConditions" not in webhook("namespaces.kube-rdma.io")
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


def test_priority_class_is_our_own() -> None:
    name = pod_spec()["priorityClassName"]
    assert not name.startswith("system-"), "system classes are admitted in kube-system only"
    priority = find("PriorityClass", name)
    assert 0 < priority["value"] <= 1_000_000_000  # the user-defined range
    assert priority["globalDefault"] is False


def test_rbac_reads_namespaces_only() -> None:
    account = pod_spec()["serviceAccountName"]
    assert find("ServiceAccount", account)["metadata"]["namespace"] == NAMESPACE
    binding = find("ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    ]
    role = find("ClusterRole", binding["roleRef"]["name"])
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}
    ]


# --- Pod Security "restricted" --------------------------------------------------------------


def effective(pod: Json, item: Json, field: str) -> Any:
    """A securityContext field as the kubelet applies it: the container's, else the pod's."""
    value = (item.get("securityContext") or {}).get(field)
    return value if value is not None else (pod.get("securityContext") or {}).get(field)


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

# The checks of the Pod Security Standards' restricted level that a pod spec can fail, plus the
# read-only root filesystem the webhook asks for; each takes the pod spec and one container.
RESTRICTED: dict[str, Callable[[Json, Json], bool]] = {
    "runAsNonRoot": lambda pod, c: effective(pod, c, "runAsNonRoot") is True,
    "runAsUser non-zero": lambda pod, c: effective(pod, c, "runAsUser") not in (0, None),
    "allowPrivilegeEscalation false": lambda pod, c: (
        c["securityContext"].get("allowPrivilegeEscalation") is False
    ),
    "not privileged": lambda pod, c: not c["securityContext"].get("privileged", False),
    "capabilities drop ALL": lambda pod, c: (
        "ALL" in c["securityContext"].get("capabilities", {}).get("drop", [])
    ),
    "capabilities add at most NET_BIND_SERVICE": lambda pod, c: (
        set(c["securityContext"].get("capabilities", {}).get("add", [])) <= {"NET_BIND_SERVICE"}
    ),
    "seccompProfile RuntimeDefault": lambda pod, c: (
        (effective(pod, c, "seccompProfile") or {}).get("type") == "RuntimeDefault"
    ),
    "no host namespaces": lambda pod, c: (
        not any(pod.get(f) for f in ("hostNetwork", "hostPID", "hostIPC"))
    ),
    "no host ports": lambda pod, c: all("hostPort" not in p for p in c.get("ports", [])),
    "allowed volume types only": lambda pod, c: all(
        (set(v) - {"name"}) <= RESTRICTED_VOLUMES for v in pod.get("volumes", [])
    ),
    "readOnlyRootFilesystem": lambda pod, c: (
        c["securityContext"].get("readOnlyRootFilesystem") is True
    ),
}


@pytest.mark.parametrize("check", RESTRICTED)
def test_webhook_pod_is_restricted(check: str) -> None:
    pod = pod_spec()
    for item in [*pod.get("initContainers", []), *pod["containers"]]:
        assert RESTRICTED[check](pod, item), f"container {item['name']} fails {check}"


def test_namespace_enforces_restricted() -> None:
    labels = find("Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


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


def test_image_runs_the_console_script_as_the_pods_user() -> None:
    assert dockerfile("ENTRYPOINT") == ['["kube-rdma"]']
    assert "kube-rdma" in PYPROJECT["project"]["scripts"]
    context = pod_spec()["securityContext"]
    assert dockerfile("USER") == [f"{context['runAsUser']}:{context['runAsGroup']}"]
    assert context["runAsUser"] != 0


def test_image_copies_every_package() -> None:
    packages = [
        p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    ]
    copied = [line.split()[0].rstrip("/") for line in dockerfile("COPY")]
    assert sorted(packages) == sorted(c for c in copied if c != "pyproject.toml")
