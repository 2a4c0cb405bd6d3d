"""The overlays for the real stacks, and the one setting that follows the cluster's version.

NVIDIA Network Operator: its resource names are written once (resource-names.yaml) and must
reach, unchanged and in agreement, the three places that decide what an RDMA pod is: the
webhook's profiles (what it adds, what already counts), the extender's --rdma-resource (what it
counts against a node) and rdma-scheduler's managedResources (which pods reach the extender).
A pod the profile mutates must then be one kube-scheduler sends to the extender, and every
resource it requests one the extender counts. Kubeflow Trainer: the default profile sends
mutated pods to rdma-scheduler. Both change nothing else of the root's stack.

kube-scheduler must stay within the version-skew policy, so its image tag is one setting, in
manifests/scheduler/kustomization.yaml, and the configuration's API version must be served by
every Kubernetes minor version kube-rdma claims.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
import yaml

from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import build_parser
from testbed.kustomize import built, by_identity, kustomization, needs_kubectl, object_of
from tests.manifests.test_manifests import K8S_VERSIONS, KUBE_SCHEDULER_TAG, MANIFESTS
from webhook.mutate import Target, mutate
from webhook.profiles import BUILTIN, Profile, parse_profiles

NETWORK_OPERATOR = "overlays/network-operator"
TRAINER = "overlays/kubeflow-trainer"
LARGE = "overlays/large-cluster"
SCHEDULER = "rdma-scheduler"
NAMES: dict[str, str] = yaml.safe_load(
    (MANIFESTS / NETWORK_OPERATOR / "resource-names.yaml").read_text()
)["data"]


def profiles(directory: str) -> dict[str, Profile]:
    text = object_of(built(directory), "ConfigMap", "kube-rdma-profiles")["data"]["profiles.yaml"]
    return dict(parse_profiles(text, directory).profiles)


def scheduler_config(directory: str) -> Json:
    config = object_of(built(directory), "ConfigMap", "rdma-scheduler-config")
    data: Json = yaml.safe_load(config["data"]["config.yaml"])
    return data


def extender_container(directory: str) -> Json:
    deployment = object_of(built(directory), "Deployment", SCHEDULER)
    containers: list[Json] = deployment["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "extender")


def managed_resources(directory: str) -> list[str]:
    [extender] = scheduler_config(directory)["extenders"]
    return [m["name"] for m in extender["managedResources"]]


def changed(directory: str) -> list[tuple[str, str, str]]:
    """The objects an overlay builds differently from the root, all of them in the root."""
    root, overlay = by_identity(built(".")), by_identity(built(directory))
    assert overlay.keys() == root.keys()
    return sorted(key for key in root if root[key] != overlay[key])


# --- NVIDIA Network Operator ----------------------------------------------------------------


def test_the_names_are_the_network_operators() -> None:
    assert NAMES == {"sharedDevice": "rdma/rdma_shared_device_a", "sriovVf": "nvidia.com/mlnxnics"}


@needs_kubectl
def test_profiles_scheduler_and_extender_agree_on_the_rdma_resources() -> None:
    shared, sriov = NAMES["sharedDevice"], NAMES["sriovVf"]
    default = profiles(NETWORK_OPERATOR)["default"]
    args = build_parser().parse_args(extender_container(NETWORK_OPERATOR)["args"])
    assert default.resources.fixed == {shared: 1}
    assert default.resources.rdma_resources == (shared, sriov)
    assert args.rdma_resource == [shared, sriov]
    assert args.gpu_resource is None  # nvidia.com/gpu, as the profile's gpuResources
    assert managed_resources(NETWORK_OPERATOR) == [*default.gpu_resources, shared, sriov]


@needs_kubectl
def test_a_mutated_pod_reaches_the_extender_which_counts_its_rdma() -> None:
    profile = profiles(NETWORK_OPERATOR)["default"]
    trainer = {"name": "trainer", "image": "t:1", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
    pod = {"metadata": {"name": "w0", "namespace": "ml"}, "spec": {"containers": [trainer]}}
    mutated = mutate(pod, "default", profile, Target("ml")).pod
    assert mutated["spec"]["schedulerName"] == SCHEDULER
    requested = set(mutated["spec"]["containers"][0]["resources"]["limits"])
    assert requested == {"nvidia.com/gpu", NAMES["sharedDevice"]}
    assert requested <= set(managed_resources(NETWORK_OPERATOR))
    patterns = build_parser().parse_args(extender_container(NETWORK_OPERATOR)["args"]).rdma_resource
    assert [p for p in patterns if fnmatch.fnmatchcase(NAMES["sharedDevice"], p)]


def test_the_names_are_written_in_one_place() -> None:
    overlay = MANIFESTS / NETWORK_OPERATOR
    holding = sorted(
        path.name
        for path in overlay.glob("*.yaml")
        for name in NAMES.values()
        if name in path.read_text()
    )
    assert holding == ["resource-names.yaml", "resource-names.yaml"]


@needs_kubectl
def test_every_placeholder_is_replaced_and_the_names_file_stays_local() -> None:
    text = yaml.safe_dump_all(built(NETWORK_OPERATOR))
    assert "from resource-names.yaml" not in text
    assert "resource-names.yaml/" not in text
    assert "network-operator-resource-names" not in {
        d["metadata"]["name"] for d in built(NETWORK_OPERATOR)
    }


@needs_kubectl
def test_the_network_operator_overlay_changes_only_those_three() -> None:
    assert changed(NETWORK_OPERATOR) == [
        ("ConfigMap", "kube-rdma", "kube-rdma-profiles"),
        ("ConfigMap", "kube-rdma", "rdma-scheduler-config"),
        ("Deployment", "kube-rdma", SCHEDULER),
    ]
    base, overlay = scheduler_config("."), scheduler_config(NETWORK_OPERATOR)
    [base_extender], [extender] = base.pop("extenders"), overlay.pop("extenders")
    assert overlay == base
    base_extender.pop("managedResources"), extender.pop("managedResources")
    assert extender == base_extender
    base_args = build_parser().parse_args(extender_container(".")["args"])
    args = build_parser().parse_args(extender_container(NETWORK_OPERATOR)["args"])
    assert vars(args) == vars(base_args) | {"rdma_resource": args.rdma_resource}


# --- Kubeflow Trainer -----------------------------------------------------------------------


@needs_kubectl
def test_trainer_profile_is_the_builtin_sent_to_rdma_scheduler() -> None:
    assert profiles(TRAINER) == {"default": Profile.model_validate({"schedulerName": SCHEDULER})}
    assert profiles(TRAINER)["default"].model_dump(exclude={"scheduler_name"}) == BUILTIN.profiles[
        "default"
    ].model_dump(exclude={"scheduler_name"})
    assert [p["schedulerName"] for p in scheduler_config(TRAINER)["profiles"]] == [SCHEDULER]
    assert changed(TRAINER) == [("ConfigMap", "kube-rdma", "kube-rdma-profiles")]


@needs_kubectl
def test_network_operator_profile_also_sends_pods_to_rdma_scheduler() -> None:
    # The overlay to use when a cluster has both stacks (docs/install.md).
    assert profiles(NETWORK_OPERATOR)["default"].scheduler_name == SCHEDULER


# --- Large clusters --------------------------------------------------------------------------

# The extender's resident memory measured at 100,000 nodes and 1,001,996 pods
# (bench/scale.py --memory-only, docs/PERFORMANCE.md), and the sizing rule the base states.
MEASURED_100K_BYTES = 8_431 * 10**6
GIB = 2**30


def gibibytes(quantity: str) -> float:
    assert quantity.endswith("Gi"), quantity
    return float(quantity.removesuffix("Gi"))


@needs_kubectl
def test_the_large_cluster_overlay_sizes_the_extender_from_the_measurement() -> None:
    resources = extender_container(LARGE)["resources"]
    request = gibibytes(resources["requests"]["memory"]) * GIB
    limit = gibibytes(resources["limits"]["memory"]) * GIB
    assert 1.15 * MEASURED_100K_BYTES <= request <= 1.35 * MEASURED_100K_BYTES
    assert 2.3 * MEASURED_100K_BYTES <= limit <= 2.7 * MEASURED_100K_BYTES
    # The base's limit would not hold it: the reason the overlay exists.
    base = extender_container(".")["resources"]["limits"]["memory"]
    assert gibibytes(base) * GIB < MEASURED_100K_BYTES


@needs_kubectl
def test_the_large_cluster_overlay_changes_only_size_gang_limit_and_nominations() -> None:
    assert changed(LARGE) == [
        ("ClusterRole", "", "kube-rdma-extender"),
        ("ConfigMap", "kube-rdma", "rdma-scheduler-config"),
        ("Deployment", "kube-rdma", SCHEDULER),
    ]
    base_args = build_parser().parse_args(extender_container(".")["args"])
    args = build_parser().parse_args(extender_container(LARGE)["args"])
    assert vars(args) == vars(base_args) | {
        "max_gang_size": 8192,
        "nominate_members": True,
        "percentage_of_nodes_to_score": 0,
    }
    base, overlay = (
        object_of(built("."), "Deployment", SCHEDULER),
        object_of(built(LARGE), "Deployment", SCHEDULER),
    )
    for deployment in (base, overlay):
        [*_, extender] = deployment["spec"]["template"]["spec"]["containers"]
        extender.pop("args"), extender.pop("resources")
    assert overlay == base


@needs_kubectl
def test_the_large_cluster_scheduler_finds_its_adaptive_share_and_the_extender_agrees() -> None:
    base, overlay = scheduler_config("."), scheduler_config(LARGE)
    assert (base.pop("percentageOfNodesToScore"), overlay.pop("percentageOfNodesToScore")) == (
        100,
        0,
    )
    assert overlay == base
    args = build_parser().parse_args(extender_container(LARGE)["args"])
    assert args.percentage_of_nodes_to_score == 0


@needs_kubectl
def test_the_large_cluster_extender_may_patch_pod_status_and_nothing_more() -> None:
    def rules(directory: str) -> list[Json]:
        found: list[Json] = object_of(built(directory), "ClusterRole", "kube-rdma-extender")[
            "rules"
        ]
        return found

    base, overlay = rules("."), rules(LARGE)
    assert overlay == [*base, {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]}]


# --- kube-scheduler's version ---------------------------------------------------------------

KUBE_SCHEDULER = "registry.k8s.io/kube-scheduler"
# The minor versions that serve each KubeSchedulerConfiguration API version (v1 came in 1.25;
# v1beta3 was removed in 1.29, v1beta2 in 1.28), from kube-scheduler's
# pkg/scheduler/apis/config/scheme.
CONFIG_API_SERVED = {
    "kubescheduler.config.k8s.io/v1": range(25, 100),
    "kubescheduler.config.k8s.io/v1beta3": range(23, 29),
    "kubescheduler.config.k8s.io/v1beta2": range(22, 28),
}


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_the_configuration_api_is_served_by_every_claimed_minor(version: str) -> None:
    config = yaml.safe_load(
        yaml.safe_load((MANIFESTS / "scheduler/configmap.yaml").read_text())["data"]["config.yaml"]
    )
    minor = int(version.split(".")[1])
    assert minor in CONFIG_API_SERVED[config["apiVersion"]]


def test_the_kube_scheduler_tag_is_set_in_one_place() -> None:
    setting = [
        (path.parent.relative_to(MANIFESTS).as_posix(), image)
        for path in MANIFESTS.rglob("kustomization.yaml")
        for image in kustomization(path.parent.relative_to(MANIFESTS).as_posix()).get("images", [])
        if image["name"] == KUBE_SCHEDULER
    ]
    assert setting == [("scheduler", {"name": KUBE_SCHEDULER, "newTag": KUBE_SCHEDULER_TAG})]
    # The oldest claimed minor: kube-scheduler may be older than the apiserver, never newer.
    assert setting[0][1]["newTag"].startswith(f"v{K8S_VERSIONS[0].rsplit('.', 1)[0]}.")


@needs_kubectl
@pytest.mark.parametrize(
    "directory", [".", NETWORK_OPERATOR, TRAINER, LARGE, "overlays/cert-manager"]
)
def test_every_stack_runs_the_one_kube_scheduler_tag(directory: str) -> None:
    images = [
        c["image"]
        for c in object_of(built(directory), "Deployment", SCHEDULER)["spec"]["template"]["spec"][
            "containers"
        ]
        if c["image"].startswith(KUBE_SCHEDULER)
    ]
    assert images == [f"{KUBE_SCHEDULER}:{KUBE_SCHEDULER_TAG}"]


def test_overlay_files_are_all_listed() -> None:
    for overlay in (NETWORK_OPERATOR, TRAINER, LARGE):
        data = kustomization(overlay)
        listed = {r for r in data.get("resources", []) if not r.startswith("../")}
        listed |= {p["path"] for p in data.get("patches", []) if "path" in p}
        files = {p.name for p in Path(MANIFESTS / overlay).glob("*.yaml")} - {"kustomization.yaml"}
        assert listed == files, overlay
