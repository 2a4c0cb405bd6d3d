"""The scheduler extender's and rdma-scheduler's manifests, checked against the Kubernetes API
schemas and against the code.

Every object validates strictly against the schemas of each claimed Kubernetes minor, as in
test_manifests.py. The KubeSchedulerConfiguration is not an API object (it is a file inside a
ConfigMap), so it is parsed and pinned field by field, and each field that names something
elsewhere is checked against it: the verbs are routes of the real extender app, the URL reaches
the extender container of the scheduler's own pod, the managed resources are ones the extender
serves and the webhook adds, the lease is one the scheduler's RBAC lets it hold.

The extender's RBAC is exactly the set of calls the real extender makes against a fake
apiserver through a sync and a scheduling cycle (filter, prioritize, bind, explain); its args
parse with the real CLI and read the weights the ConfigMap provides, which parse with the real
loader. Both pods pass Pod Security "restricted", which their namespace enforces.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import kubernetes_validate
import orjson
import pytest
import yaml
from aiohttp import web

from extender import app as extender_app
from extender.app import Settings, create_app
from extender.book.configmaps import ConfigMapRecords
from extender.book.records import PlanRecord
from extender.cluster.disruptions import LiveDisruptions
from extender.cluster.live import BIND_TIMEOUT_SECONDS, LiveSource
from extender.cluster.snapshot import SnapshotSource
from extender.levels.watched import TopologyRef, TopologyWatch
from extender.weights import DEFAULT, parse_weights
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import build_parser
from testbed.builders import nodes
from testbed.fakeapi import (
    WORKLOAD_RESOURCES,
    FakeApiServer,
    RecordedRequest,
    Resource,
    device_taint_rules,
    eventually,
    native_gang_resources,
)
from testbed.kustomize import built, identity, kustomization, needs_kubectl
from tests.manifests.test_manifests import (
    DOCUMENTS,
    IMAGE,
    K8S_VERSIONS,
    KUBE_SCHEDULER_TAG,
    LEVELS,
    LOCKED_DOWN,
    MANIFESTS,
    PYPROJECT,
    VERBS,
    failures,
    find,
    selects,
)
from webhook.mutate import Target, mutate
from webhook.profiles import Profile

DIRECTORIES = ("extender", "scheduler")
DOCS = [(name, doc) for name, doc in DOCUMENTS if name.split("/")[0] in DIRECTORIES]

NAMESPACE = "kube-rdma"  # created by manifests/namespaces
EXTENDER = "kube-rdma-extender"  # ClusterRole, ...
EXTENDER_CONTAINER = "extender"
SCHEDULER_CONTAINER = "kube-scheduler"
WEIGHTS_CONFIGMAP = "kube-rdma-weights"
SCHEDULER = "rdma-scheduler"  # scheduler name, Deployment, ServiceAccount, lease, ...
SCHEDULER_CONFIGMAP = "rdma-scheduler-config"
SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler"
SCHEDULER_TAG = KUBE_SCHEDULER_TAG
MANAGED_RESOURCES = ["nvidia.com/gpu", "rdma/hca"]

# The whole configuration, as the ConfigMap must hold it (a v1 KubeSchedulerConfiguration).
SCHEDULER_CONFIG: Json = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {
        "leaderElect": True,
        "resourceLock": "leases",
        "resourceName": SCHEDULER,
        "resourceNamespace": NAMESPACE,
    },
    "profiles": [{"schedulerName": SCHEDULER}],
    "percentageOfNodesToScore": 100,
    "extenders": [
        {
            "urlPrefix": "http://127.0.0.1:8888",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "bindVerb": "bind",
            "preemptVerb": "preempt",
            "weight": 5,
            "nodeCacheCapable": True,
            "enableHTTPS": False,
            "httpTimeout": "5s",
            "ignorable": False,
            "managedResources": [
                {"name": name, "ignoredByScheduler": False} for name in MANAGED_RESOURCES
            ],
        }
    ],
}


def scheduler_config() -> Json:
    data: Json = yaml.safe_load(find("ConfigMap", SCHEDULER_CONFIGMAP)["data"]["config.yaml"])
    return data


def extender_config() -> Json:
    extenders: list[Json] = scheduler_config()["extenders"]
    assert len(extenders) == 1
    return extenders[0]


def pod_spec(deployment: str) -> Json:
    spec: Json = find("Deployment", deployment)["spec"]["template"]["spec"]
    return spec


def pod_labels(deployment: str) -> dict[str, str]:
    labels: dict[str, str] = find("Deployment", deployment)["spec"]["template"]["metadata"][
        "labels"
    ]
    return labels


def container(name: str) -> Json:
    """A container of the scheduler's pod: kube-scheduler, or the extender beside it."""
    containers: list[Json] = pod_spec(SCHEDULER)["containers"]
    assert [c["name"] for c in containers] == [SCHEDULER_CONTAINER, EXTENDER_CONTAINER]
    return next(c for c in containers if c["name"] == name)


def container_port(name: str, port: int | str) -> int:
    """A port number, resolving a named container port."""
    if isinstance(port, int):
        return port
    ports = container(name)["ports"]
    return int(next(p["containerPort"] for p in ports if p["name"] == port))


def extender_args() -> Any:
    spec = container(EXTENDER_CONTAINER)
    assert "command" not in spec, "the image's ENTRYPOINT (kube-rdma) must stay in charge"
    return build_parser().parse_args(spec["args"])


def extender_routes() -> set[tuple[str, str]]:
    """(method, path) of every route of the real extender app."""
    app = create_app(Settings(), SnapshotSource([]))
    return {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None
    }


def seconds(duration: str) -> float:
    """A Go duration such as `5s`, `1m30s` or `500ms`, in seconds."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert "".join(n + u for n, u in parts) == duration, f"not a Go duration: {duration!r}"
    return sum(float(n) * units[u] for n, u in parts)


# --- schema ---------------------------------------------------------------------------------


def test_manifests_exist() -> None:
    assert [name for name, _ in DOCS] == [
        "extender/configmap.yaml:ConfigMap/kube-rdma-weights",
        "extender/rbac.yaml:ClusterRole/kube-rdma-extender",
        "extender/rbac.yaml:ClusterRoleBinding/kube-rdma-extender",
        "extender/rbac.yaml:Role/kube-rdma-extender-gang-plans",
        "extender/rbac.yaml:RoleBinding/kube-rdma-extender-gang-plans",
        "scheduler/configmap.yaml:ConfigMap/rdma-scheduler-config",
        "scheduler/deployment.yaml:Deployment/rdma-scheduler",
        "scheduler/poddisruptionbudget.yaml:PodDisruptionBudget/rdma-scheduler",
        "scheduler/priorityclass.yaml:PriorityClass/rdma-scheduler",
        "scheduler/rbac.yaml:ServiceAccount/rdma-scheduler",
        "scheduler/rbac.yaml:ClusterRole/rdma-scheduler",
        "scheduler/rbac.yaml:ClusterRoleBinding/rdma-scheduler",
        "scheduler/rbac.yaml:ClusterRoleBinding/rdma-scheduler-as-volume-scheduler",
        "scheduler/rbac.yaml:RoleBinding/rdma-scheduler-extension-apiserver-authentication-reader",
        "scheduler/rbac.yaml:Role/rdma-scheduler-leader-election",
        "scheduler/rbac.yaml:RoleBinding/rdma-scheduler-leader-election",
    ]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("doc", [d for _, d in DOCS], ids=[n for n, _ in DOCS])
def test_validates_against_the_kubernetes_schema(doc: Json, version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "PriorityClass"}
PLAN_NAMESPACE = "kube-rdma-plans"  # the gang plan records', created by manifests/namespaces
# The objects elsewhere: the client CA for kube-scheduler's own endpoints is read in
# kube-system; the gang plan records are written in a namespace of their own.
ELSEWHERE = {
    "scheduler/rbac.yaml:RoleBinding/rdma-scheduler-extension-apiserver-authentication-reader": (
        "kube-system"
    ),
    "extender/rbac.yaml:Role/kube-rdma-extender-gang-plans": PLAN_NAMESPACE,
    "extender/rbac.yaml:RoleBinding/kube-rdma-extender-gang-plans": PLAN_NAMESPACE,
}


@pytest.mark.parametrize(("name", "doc"), DOCS, ids=[n for n, _ in DOCS])
def test_namespaced_objects_live_in_kube_rdma(name: str, doc: Json) -> None:
    expected = ELSEWHERE.get(name, NAMESPACE)
    assert doc["metadata"].get("namespace") == (None if doc["kind"] in CLUSTER_SCOPED else expected)


def test_kube_rdma_namespace_is_created_by_the_root_only() -> None:
    defined = [
        name
        for name, doc in DOCUMENTS
        if doc["kind"] == "Namespace" and doc["metadata"]["name"] == NAMESPACE
    ]
    assert defined == ["namespaces/namespaces.yaml:Namespace/kube-rdma"]


# --- kustomize ------------------------------------------------------------------------------


@pytest.mark.parametrize("directory", DIRECTORIES)
def test_kustomization_lists_every_manifest(directory: str) -> None:
    files = {p.name for p in (MANIFESTS / directory).glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization(directory)["resources"]) == sorted(files)


def test_extender_runs_the_kube_rdma_image() -> None:
    version = PYPROJECT["project"]["version"]
    assert {"name": IMAGE, "newTag": version} in kustomization("scheduler")["images"]
    assert container(EXTENDER_CONTAINER)["image"] == f"{IMAGE}:{version}"


def test_scheduler_runs_kube_scheduler_of_the_oldest_supported_minor() -> None:
    images = kustomization("scheduler")["images"]
    assert {"name": SCHEDULER_IMAGE, "newTag": SCHEDULER_TAG} in images
    assert container(SCHEDULER_CONTAINER)["image"] == f"{SCHEDULER_IMAGE}:{SCHEDULER_TAG}"
    oldest = K8S_VERSIONS[0].rsplit(".", 1)[0]  # 1.33
    assert SCHEDULER_TAG.startswith(f"v{oldest}.")


@needs_kubectl
@pytest.mark.parametrize("directory", DIRECTORIES)
def test_kustomize_build_yields_every_document(directory: str) -> None:
    expected = [doc for name, doc in DOCS if name.startswith(f"{directory}/")]
    assert sorted(identity(d) for d in built(directory)) == sorted(identity(d) for d in expected)


# --- KubeSchedulerConfiguration -------------------------------------------------------------


def test_scheduler_configuration_is_exactly_the_documented_one() -> None:
    config = scheduler_config()
    assert config.keys() == SCHEDULER_CONFIG.keys()
    for field, value in SCHEDULER_CONFIG.items():
        assert config[field] == value, field
    assert extender_config().keys() == SCHEDULER_CONFIG["extenders"][0].keys()


def test_extender_verbs_are_the_extender_apps_routes() -> None:
    extender = extender_config()
    fields = ("filterVerb", "prioritizeVerb", "bindVerb", "preemptVerb")
    verbs = [extender[f] for f in fields]
    posted = sorted(path for method, path in extender_routes() if method == "POST")
    # Every configured verb is served, and every served verb is configured.
    assert posted == sorted(f"/{verb}" for verb in verbs)


def test_url_prefix_reaches_the_extender_container() -> None:
    url = urlsplit(extender_config()["urlPrefix"])
    args = extender_args()
    assert (url.scheme, url.path, url.query) == ("http", "", "")
    assert extender_config()["enableHTTPS"] is False
    assert (args.tls_cert_file, args.tls_key_file) == (None, None)  # the extender serves HTTP
    # The extender of the scheduler's own pod, on the loopback: no Service reaches it.
    assert (url.hostname, url.port) == ("127.0.0.1", args.port) == (args.host, 8888)
    assert container_port(EXTENDER_CONTAINER, "extender") == args.port
    assert not [
        doc
        for _, doc in DOCUMENTS
        if doc["kind"] == "Service"
        and selects({"matchLabels": doc["spec"].get("selector") or {}}, pod_labels(SCHEDULER))
        and doc["spec"].get("selector")
    ]


def test_extender_is_sent_node_names_only() -> None:
    assert extender_config()["nodeCacheCapable"] is True


def test_extender_scores_count_and_calls_time_out_within_the_default() -> None:
    extender = extender_config()
    assert extender["weight"] > 0  # no default; a prioritizing extender needs one
    timeout = seconds(extender["httpTimeout"])
    assert BIND_TIMEOUT_SECONDS < timeout <= 5.0


def test_scheduling_fails_rather_than_going_on_without_the_extender() -> None:
    assert extender_config()["ignorable"] is False


def test_managed_resources_are_served_by_the_extender() -> None:
    managed = extender_config()["managedResources"]
    assert all(m["ignoredByScheduler"] is False for m in managed)
    assert [m["name"] for m in managed] == MANAGED_RESOURCES
    args = extender_args()
    assert (args.gpu_resource, args.rdma_resource) == (None, None)  # the defaults below
    settings = Settings()
    for name in MANAGED_RESOURCES:
        rdma = any(fnmatch.fnmatchcase(name, p) for p in settings.rdma_resources)
        assert rdma or name in settings.gpu_resources, name


def test_a_webhook_profile_sends_its_pods_to_the_scheduler_and_the_extender() -> None:
    # The built-in profile plus schedulerName, on a GPU pod as a training job creates it.
    profile = Profile.model_validate({"schedulerName": SCHEDULER})
    trainer = {
        "name": "trainer",
        "image": "trainer:1",
        "resources": {"limits": {"nvidia.com/gpu": "8"}},
    }
    pod = {"metadata": {"name": "w0", "namespace": "team-a"}, "spec": {"containers": [trainer]}}
    mutated = mutate(pod, "default", profile, Target("team-a")).pod
    assert [mutated["spec"]["schedulerName"]] == [
        p["schedulerName"] for p in scheduler_config()["profiles"]
    ]
    requested = {r for c in mutated["spec"]["containers"] for r in c["resources"]["limits"]}
    assert requested == set(MANAGED_RESOURCES)  # so kube-scheduler calls the extender


def test_every_feasible_node_reaches_the_extender() -> None:
    config = scheduler_config()
    assert config["percentageOfNodesToScore"] == 100
    assert all("percentageOfNodesToScore" not in p for p in config["profiles"])


# --- rdma-scheduler -------------------------------------------------------------------------


def bindings_of(account: str) -> list[tuple[str, str, str, str]]:
    """(binding kind, binding namespace, role kind, role name) of every binding that names the
    scheduler's ServiceAccount, which each names alone."""
    subject = {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    bindings = [
        doc
        for _, doc in DOCUMENTS
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding") and subject in doc["subjects"]
    ]
    assert all(b["subjects"] == [subject] for b in bindings)
    return sorted(
        (
            b["kind"],
            b["metadata"].get("namespace", ""),
            b["roleRef"]["kind"],
            b["roleRef"]["name"],
        )
        for b in bindings
    )


def test_scheduler_holds_its_own_roles_and_its_own_lease() -> None:
    account = pod_spec(SCHEDULER)["serviceAccountName"]
    assert find("ServiceAccount", account)["metadata"]["namespace"] == NAMESPACE
    assert bindings_of(account) == [
        # The extender container's, under the pod's one ServiceAccount.
        ("ClusterRoleBinding", "", "ClusterRole", "kube-rdma-extender"),
        ("ClusterRoleBinding", "", "ClusterRole", "rdma-scheduler"),
        ("ClusterRoleBinding", "", "ClusterRole", "system:volume-scheduler"),
        ("RoleBinding", "kube-rdma", "Role", "rdma-scheduler-leader-election"),
        ("RoleBinding", "kube-rdma-plans", "Role", "kube-rdma-extender-gang-plans"),
        ("RoleBinding", "kube-system", "Role", "extension-apiserver-authentication-reader"),
    ]
    election = scheduler_config()["leaderElection"]
    # Not the default scheduler's lease, which the two would otherwise take turns holding.
    assert election["resourceName"] == SCHEDULER != "kube-scheduler"
    assert election["resourceNamespace"] == find("Deployment", SCHEDULER)["metadata"]["namespace"]
    role = find("Role", "rdma-scheduler-leader-election")
    assert role["metadata"]["namespace"] == election["resourceNamespace"]
    # create cannot be narrowed to a name; a Role narrows it to the namespace.
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [election["resourceName"]],
            "verbs": ["get", "update"],
        },
    ]


# system:kube-scheduler as plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go
# (ClusterRoles) writes it (its testdata/cluster-roles.yaml lists it for the default gates),
# as (apiGroup, resource, verb): the base rules of 1.30 to 1.35, then the rules it adds where
# DynamicResourceAllocation is on (on by default since 1.34), and its two Lease rules.
def _expand(groups: str, resources: str, verbs: str) -> set[tuple[str, str, str]]:
    return {
        ("" if g == "core" else g, r, v)
        for g in groups.split()
        for r in resources.split()
        for v in verbs.split()
    }


READ = "get list watch"
KUBE_SCHEDULER_BASE = set().union(
    _expand("core events.k8s.io", "events", "create patch update"),
    _expand("core", "nodes", READ),
    _expand("core", "pods", "delete get list watch"),
    _expand("core", "bindings pods/binding", "create"),
    _expand("core", "pods/status", "patch update"),
    _expand("core", "replicationcontrollers services", READ),
    _expand("apps extensions", "replicasets", READ),
    _expand("apps", "statefulsets", READ),
    _expand("policy", "poddisruptionbudgets", READ),
    _expand("core", "persistentvolumeclaims persistentvolumes", READ),
    _expand("authentication.k8s.io", "tokenreviews", "create"),
    _expand("authorization.k8s.io", "subjectaccessreviews", "create"),
    _expand("storage.k8s.io", "csinodes csidrivers csistoragecapacities", READ),
    _expand("core", "namespaces", READ),
)
KUBE_SCHEDULER_DRA = set().union(
    _expand("resource.k8s.io", "resourceclaims resourceslices deviceclasses", READ),
    _expand("resource.k8s.io", "resourceclaims/status", "patch update"),
)


NATIVE_GANGS = _expand("scheduling.k8s.io", "workloads podgroups compositepodgroups", READ)
"""Read where GenericWorkload is on (1.35+), by the GangScheduling plugin and the PodGroup cycle."""


def granted(rules: list[Json]) -> set[tuple[str, str, str]]:
    assert all("resourceNames" not in rule for rule in rules)
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_scheduler_role_is_kube_scheduler_s_without_the_default_scheduler_s_lease() -> None:
    """The ClusterRole system:kube-scheduler also grants get and update on every Lease named
    kube-scheduler (the default scheduler's) and create on Leases anywhere; rdma-scheduler's
    copy has neither, and its own lease comes from a Role in its namespace."""
    role = find("ClusterRole", SCHEDULER)
    assert granted(role["rules"]) == KUBE_SCHEDULER_BASE | KUBE_SCHEDULER_DRA | NATIVE_GANGS
    assert not any(group == "coordination.k8s.io" for group, _, _ in granted(role["rules"]))
    names = [d["roleRef"]["name"] for _, d in DOCUMENTS if d["kind"].endswith("RoleBinding")]
    assert "system:kube-scheduler" not in names


# --- extender Deployment --------------------------------------------------------------------


def test_extender_args_parse_with_the_cli() -> None:
    args = extender_args()
    assert args.command == "extender"
    assert args.in_cluster is True
    assert (args.kubeconfig, args.cluster_snapshot) == (None, None)
    assert args.weights == Path("/config/weights.yaml")
    assert (args.host, args.port) == ("127.0.0.1", 8888)
    assert container(EXTENDER_CONTAINER)["ports"] == [
        {"name": "extender", "containerPort": args.port, "protocol": "TCP"}
    ]
    # Gang plan records go to a namespace of their own, where the extender's Role lets it write
    # ConfigMaps: none of kube-rdma's, where the webhook's profiles are.
    assert "env" not in container(EXTENDER_CONTAINER)
    assert args.plan_namespace == PLAN_NAMESPACE != NAMESPACE
    role = find("Role", "kube-rdma-extender-gang-plans")
    assert role["metadata"]["namespace"] == PLAN_NAMESPACE
    assert [r["resources"] for r in role["rules"]] == [["configmaps"]]
    namespaces = [d["metadata"]["name"] for _, d in DOCUMENTS if d["kind"] == "Namespace"]
    assert PLAN_NAMESPACE in namespaces
    # --in-cluster authenticates with the pod's ServiceAccount token.
    assert pod_spec(SCHEDULER).get("automountServiceAccountToken", True) is True


def test_weights_file_comes_from_the_configmap_directory() -> None:
    path: Path = extender_args().weights
    mounts = [
        m
        for m in container(EXTENDER_CONTAINER)["volumeMounts"]
        if Path(m["mountPath"]) == path.parent
    ]
    assert len(mounts) == 1
    # A whole-directory mount: kubelet never updates files mounted with subPath.
    assert mounts[0]["readOnly"] is True
    assert "subPath" not in mounts[0]
    volume = next(v for v in pod_spec(SCHEDULER)["volumes"] if v["name"] == mounts[0]["name"])
    assert volume == {"name": mounts[0]["name"], "configMap": {"name": WEIGHTS_CONFIGMAP}}
    assert path.name in find("ConfigMap", WEIGHTS_CONFIGMAP)["data"]


def test_weights_are_the_builtin_written_out() -> None:
    text = find("ConfigMap", WEIGHTS_CONFIGMAP)["data"]["weights.yaml"]
    weights = parse_weights(text, f"ConfigMap {WEIGHTS_CONFIGMAP}")
    assert weights == DEFAULT
    assert weights.as_dict() == {"affinity": 3.0, "rate": 1.0, "binpack": 2.0, "locality": 1.0}


def test_the_extender_serves_only_beside_the_leading_scheduler() -> None:
    # No Deployment of its own: it runs in each scheduler replica, and only the replica holding
    # the Lease calls it, so two extenders never answer at once.
    assert not [
        doc
        for _, doc in DOCUMENTS
        if doc["metadata"]["name"] == EXTENDER
        and doc["kind"] in ("Deployment", "Service", "NetworkPolicy")
    ]
    # Probes would reach the pod's IP, where the extender does not listen.
    assert not {"readinessProbe", "livenessProbe"} & container(EXTENDER_CONTAINER).keys()


@pytest.mark.parametrize("deployment", [SCHEDULER])
def test_priority_class_is_our_own(deployment: str) -> None:
    name = pod_spec(deployment)["priorityClassName"]
    assert not name.startswith("system-"), "system classes are admitted in kube-system only"
    priority = find("PriorityClass", name)
    assert 0 < priority["value"] <= 1_000_000_000
    assert priority["globalDefault"] is False


# --- the extender's RBAC, against what it calls ---------------------------------------------


def authorized_as(request: RecordedRequest) -> tuple[str, str, str]:
    """(apiGroup, resource, verb) as the apiserver authorizes a core/v1 request: a POST of
    `/api/v1/namespaces/N/pods/P/binding` is `create` on `pods/binding`, a GET of
    `/api/v1/pods?watch=true` is `watch` on `pods`."""
    parts = request.path.strip("/").split("/")
    if parts[0] == "apis":  # /apis/<group>/<version>/...
        group, rest = parts[1], parts[3:]
    else:
        assert parts[:2] == ["api", "v1"], request.path
        group, rest = "", parts[2:]
    if rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]  # a namespaced resource
    verb = VERBS[request.method]
    if request.method == "GET" and len(rest) == 1:
        verb = "watch" if request.watch else "list"
    return group, "/".join(rest[::2]), verb


WATCHED = 3 + len(WORKLOAD_RESOURCES) + 2 + 5 + 2
"""Watches of the extender: nodes, pods, gang plan records, every workload resource, the two
Topology objects, the five DRA resources and Kubernetes' own PodGroups and CompositePodGroups."""


def native_watches(fake_api: FakeApiServer) -> set[str]:
    """The scheduling.k8s.io resources the extender watches."""
    return {
        r.path.rsplit("/", 1)[1]
        for r in fake_api.requests
        if r.watch and "/apis/scheduling.k8s.io/" in r.path
    }


def discovery(request: RecordedRequest) -> bool:
    """A GET of /api/v1, /apis/GROUP or /apis/GROUP/VERSION: which versions a group serves and
    which resources a group version serves."""
    parts = len(request.path.strip("/").split("/"))
    return parts == 2 if request.path.startswith("/api/") else parts in (2, 3)


TOPOLOGIES = {
    "topologies.kueue.x-k8s.io": Resource(
        "Topology", False, "kueue.x-k8s.io/v1beta1", "topologies"
    ),
    "topologies.kai.scheduler": Resource("Topology", False, "kai.scheduler/v1", "topologies"),
}


@asynccontextmanager
async def serving(
    source: LiveSource, records: ConfigMapRecords
) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    """The real extender app around `source`, on a loopback port."""
    disruptions = LiveDisruptions(source.core_api)  # the one the source reads with
    app = create_app(Settings(), source, None, records, disruptions)
    from kubernetes_asyncio import client

    # As --topology-object adds it, for each of the two groups it may name.
    custom = client.CustomObjectsApi(source.core_api.api_client)
    requirements = app[extender_app.EXTENDER].scheduler.planner.requirements
    for ref in (TopologyRef("kueue", "default"), TopologyRef("kai", "default")):
        app.cleanup_ctx.append(TopologyWatch(custom, ref, requirements.use).context)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield session, f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_extender_rbac_is_exactly_what_the_extender_calls(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("nodes", nodes.node("gpu-1", nodes.hgx()))
    fake_api.create("nodes", nodes.node("gpu-2", nodes.hgx(down=(3,))))
    fake_api.create("pods", nodes.pod("busy", gpus=2, node_name="gpu-2", phase="Running"))
    pod = fake_api.create("pods", nodes.pod("worker-0", node_settings=True))
    # Kubernetes' own gangs as 1.37 serves them (v1beta1: pods name PodGroups; v1alpha3 beside
    # it serves CompositePodGroups), and its DeviceTaintRules
    composite = "compositepodgroups.scheduling.k8s.io"
    native = {
        **native_gang_resources("v1beta1"),
        composite: native_gang_resources("v1alpha3")[composite],
    }
    optional_apis = {**WORKLOAD_RESOURCES, **TOPOLOGIES, **native}
    optional_apis["devicetaintrules"] = device_taint_rules("1.37")
    for key, resource in optional_apis.items():  # every optional CRD and API
        fake_api.install(key, resource)
    from kubernetes_asyncio import client

    source = LiveSource(core_v1, custom_api=client.CustomObjectsApi(core_v1.api_client))
    records = ConfigMapRecords(core_v1, NAMESPACE, "extender-1")
    async with serving(source, records) as (session, base):

        async def ready() -> bool:
            async with session.get(f"{base}/readyz") as response:
                return response.status == 200

        await eventually(ready)
        # nodes, pods, gang plan records, every workload resource, the two Topology objects
        # and the five DRA resources
        # and Kubernetes' own PodGroups and CompositePodGroups
        await eventually(lambda: fake_api.watching == WATCHED)
        assert native_watches(fake_api) == {"podgroups", "compositepodgroups"}
        # One scheduling cycle, as rdma-scheduler drives it, and an admin's explain.
        args = {"Pod": pod, "NodeNames": ["gpu-1", "gpu-2"], "Nodes": None}
        async with session.post(f"{base}/filter", data=orjson.dumps(args)) as response:
            assert (await response.json())["NodeNames"] == ["gpu-1"]
        async with session.post(f"{base}/prioritize", data=orjson.dumps(args)) as response:
            assert response.status == 200
        meta = pod["metadata"]
        binding = {"PodName": meta["name"], "PodNamespace": meta["namespace"]}
        binding |= {"PodUID": meta["uid"], "Node": "gpu-1"}
        async with session.post(f"{base}/bind", data=orjson.dumps(binding)) as response:
            assert await response.json() == {"Error": ""}
        async with session.get(f"{base}/explain?namespace=team-a&name=worker-0") as response:
            assert response.status == 200
        # A pod not in the cache (yet) is read from the apiserver.
        async with session.get(f"{base}/explain?namespace=team-a&name=ghost") as response:
            assert response.status == 404
        await write_gang_plan_records(fake_api, records)
        # A gang of higher priority (2 x 4 GPUs) with no room preempts the least it can: busy,
        # 2 GPUs on gpu-2 (6 free), not worker-0 (8 GPUs on gpu-1): the eviction made dry
        # first, then for real, and an event on the victim.
        ours = {keys.GANG: "urgent", keys.GANG_SIZE: "2"}
        # Both members exist: a gang acts (plans, holds, preempts) only once they do.
        members = [nodes.pod(f"urgent-{i}", gpus=4, annotations=ours) for i in range(2)]
        for member in members:
            member["spec"]["priority"] = 1000
        urgent, _ = [fake_api.create("pods", member) for member in members]
        args = {"Pod": urgent, "NodeNames": ["gpu-1", "gpu-2"], "Nodes": None}
        await eventually(lambda: source.cluster.pod("team-a", "urgent-1") is not None)
        async with session.post(f"{base}/filter", data=orjson.dumps(args)) as response:
            assert (await response.json())["NodeNames"] == []
        await eventually(lambda: len(fake_api.objects("events")) == 1)
        [event] = fake_api.objects("events")
        assert (event["reason"], event["involvedObject"]["name"]) == ("Preempted", "busy")
        assert event["message"] == (
            "Preempted by gang team-a/urgent (priority 1000) to place it whole in cluster; "
            "pod team-a/busy is evicted whole"
        )
        evictions = [r for r in fake_api.requests if r.path.endswith("/eviction")]
        assert [r.query.get("dryRun") for r in evictions] == ["All", None]
        # A DRA gang member bound at its barrier, after kube-scheduler unreserved its claim
        # when its bind request timed out: the claim is read and reserved for it again.
        await reserve_a_claim_again(fake_api, source)
    # API discovery (GET /apis/GROUP/VERSION) is a non-resource URL that every authenticated
    # user may read (the system:discovery ClusterRole), so it needs no rule of ours.
    called = sorted({authorized_as(r) for r in fake_api.requests if not discovery(r)})
    optional = [
        ("batch", "jobs"),
        ("batch.volcano.sh", "jobs"),
        ("jobset.x-k8s.io", "jobsets"),
        ("kai.scheduler", "topologies"),
        ("kubeflow.org", "mpijobs"),
        ("kubeflow.org", "pytorchjobs"),
        ("kueue.x-k8s.io", "topologies"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "devicetaintrules"),
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.k8s.io", "resourceslices"),
        ("scheduling.k8s.io", "compositepodgroups"),
        ("scheduling.k8s.io", "podgroups"),
        ("scheduling.volcano.sh", "podgroups"),
        ("scheduling.x-k8s.io", "podgroups"),
    ]
    expected = [
        ("", "configmaps", "create"),
        ("", "configmaps", "delete"),
        ("", "configmaps", "get"),
        ("", "configmaps", "list"),
        ("", "configmaps", "update"),
        ("", "configmaps", "watch"),
        ("", "events", "create"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("", "pods", "get"),
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "pods/binding", "create"),
        ("", "pods/eviction", "create"),
        *((group, plural, verb) for group, plural in optional for verb in ("list", "watch")),
        ("resource.k8s.io", "resourceclaims", "get"),
        ("resource.k8s.io", "resourceclaims/status", "update"),
    ]
    assert called == sorted(expected)

    # The bind verb is how the node's NCCL settings reach the pod: in the Binding itself.
    [posted] = [r for r in fake_api.requests if r.path.endswith("/binding")]
    assert {keys.GID_INDEX, keys.HCA} <= posted.body["metadata"]["annotations"].keys()
    rules = extender_rules()
    assert all(rule.keys() == {"apiGroups", "resources", "verbs"} for rule in rules)
    granted = sorted(
        {
            (group, resource, verb)
            for rule in rules
            for group in rule["apiGroups"]
            for resource in rule["resources"]
            for verb in rule["verbs"]
        }
    )
    # Workloads are read only where 1.35's v1alpha1 serves them (pods name a Workload there);
    # this cluster serves 1.37's v1beta1, where pods name PodGroups.
    v1alpha1_only = [("scheduling.k8s.io", "workloads", verb) for verb in ("list", "watch")]
    assert [g for g in granted if g not in v1alpha1_only] == called


async def reserve_a_claim_again(api: FakeApiServer, source: LiveSource) -> None:
    await eventually(lambda: api.watching == WATCHED)
    results = [{"request": "g", "driver": "gpu.nvidia.com", "pool": "gpu-1", "device": "gpu-0"}]
    selector = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]}
    allocation = {
        "devices": {"results": results},
        "nodeSelector": {"nodeSelectorTerms": [selector]},
    }
    claim = {"metadata": {"name": "m-0-gpus"}, "spec": {}, "status": {"allocation": allocation}}
    api.create("resourceclaims", claim, "team-a")
    member = nodes.pod("m-0")
    member["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "m-0-gpus"}]
    member = api.create("pods", member)
    await eventually(lambda: source.cluster.pod("team-a", "m-0") is not None)
    await source.reserve_claims(member, "gpu-1")
    reserved = api.get("resourceclaims", "m-0-gpus", "team-a")["status"]["reservedFor"]
    assert reserved == [{"resource": "pods", "name": "m-0", "uid": member["metadata"]["uid"]}]


async def write_gang_plan_records(api: FakeApiServer, records: ConfigMapRecords) -> None:
    """Every write a gang plan record sees: made, made again (replaced), replaced after another
    process wrote it (read again), and removed."""
    record = PlanRecord(("team-a", "llama"), 2, "leaf-a", ("gpu-1", "gpu-1"))
    for slots in [("gpu-1", "gpu-1"), ("gpu-1", "gpu-2")]:
        records.put(PlanRecord(record.gang, 2, "leaf-a", slots))
        assert await records.flush(record.gang)
    [stored] = api.objects("configmaps", NAMESPACE)
    api.update("configmaps", {**stored, "data": {**stored["data"], "holder": "x"}}, NAMESPACE)
    records._versions[record.gang] = stored["metadata"]["resourceVersion"]  # now stale
    records.put(record)
    assert await records.flush(record.gang)
    records.remove(record.gang)
    assert await records.flush(record.gang)
    assert api.objects("configmaps", NAMESPACE) == []


def extender_rules() -> list[Json]:
    """The rules of the extender's roles, bound to the scheduler pod's ServiceAccount (the
    extender container runs under it)."""
    account = pod_spec(SCHEDULER)["serviceAccountName"]
    assert find("ServiceAccount", account)["metadata"]["namespace"] == NAMESPACE
    subject = {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    bindings = [
        doc
        for _, doc in DOCUMENTS
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and doc["metadata"]["name"].startswith(EXTENDER)
    ]
    assert [b["subjects"] for b in bindings] == [[subject], [subject]]
    roles = [find(b["roleRef"]["kind"], b["roleRef"]["name"]) for b in bindings]
    return [rule for role in roles for rule in role["rules"]]


# --- Pod Security ---------------------------------------------------------------------------


@pytest.mark.parametrize("check", LOCKED_DOWN)
@pytest.mark.parametrize("deployment", [SCHEDULER])
def test_pod_is_locked_down(deployment: str, check: str) -> None:
    assert failures({check: LOCKED_DOWN[check]}, pod_spec(deployment)) == []


@pytest.mark.parametrize("deployment", [SCHEDULER])
def test_namespace_enforces_restricted_and_that_admits_the_pod(deployment: str) -> None:
    namespace = find("Deployment", deployment)["metadata"]["namespace"]
    labels = find("Namespace", namespace)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    admitting = [
        name for name, checks in LEVELS.items() if not failures(checks, pod_spec(deployment))
    ]
    assert admitting == ["privileged", "baseline", "restricted"]
