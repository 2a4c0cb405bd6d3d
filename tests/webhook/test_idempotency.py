"""A second pass over the webhook's own output changes nothing, whatever the pod looks like,
and other mutating webhooks running before or after never lead to duplicates."""

from __future__ import annotations

import base64
import copy
from pathlib import Path

import jsonpatch
import orjson
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kube_rdma.core.objects import Json
from testbed.builders import pods
from tests.webhook import apiserver
from webhook.admission import Admitter
from webhook.namespaces import StaticNamespaces
from webhook.patch import diff
from webhook.profile_store import ProfileStore

PROFILE_NAMES = [
    "default",
    "rails8",
    "hostnet",
    "node",
    "lenient",
    "roce-pod",
    "roce-pod-env",
    "sriov",
    "exclude",
]
NAMESPACES = StaticNamespaces(
    {
        "team-a": {},
        "ml-training": {"kube-rdma.io/injection": "enabled"},
        "locked": {"pod-security.kubernetes.io/enforce": "baseline"},
        "strict": {"pod-security.kubernetes.io/enforce": "restricted"},
    }
)
NCCL_NAMES = [
    "NCCL_IB_DISABLE",
    "NCCL_SOCKET_IFNAME",
    "NCCL_IB_HCA",
    "NCCL_IB_GID_INDEX",
    "NCCL_NET",
    "NCCL_CONF_FILE",
    "OTHER",
]
RESOURCES = [
    "rdma/hca",
    "rdma/hca1",
    "nvidia.com/sriov_rdma_vf",
    "nvidia.com/hostdev",
    "spidernet.io/hca_shared_devices",
    "intel.com/sriov_netdevice",
]


def admitter(tmp_path: Path) -> Admitter:
    path = tmp_path / "profiles.yaml"
    path.write_text(pods.PROFILES_YAML)
    return Admitter(ProfileStore(path), NAMESPACES, "kube-rdma")


def patched(request: Json, response: Json) -> Json:
    body = response["response"]
    if "patch" not in body:
        return copy.deepcopy(request["object"])
    result: Json = jsonpatch.apply_patch(
        request["object"], orjson.loads(base64.b64decode(body["patch"]))
    )
    return result


@st.composite
def containers(draw: st.DrawFn, name: str) -> Json:
    container: Json = {"name": name, "image": "trainer:1"}
    limits: Json = {}
    gpus = draw(st.integers(0, 8))
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    if draw(st.booleans()):
        limits["memory"] = f"{draw(st.integers(1, 4096))}Mi"
    if draw(st.booleans()):
        limits[draw(st.sampled_from(RESOURCES))] = "1"
    if limits:
        container["resources"] = {"limits": limits, "requests": dict(limits)}
    env_names = draw(st.lists(st.sampled_from(NCCL_NAMES), unique=True, max_size=3))
    if env_names:
        values = st.sampled_from(["user", "1", "mlx5_1", "Socket", "=mlx5_0"])
        container["env"] = [{"name": n, "value": draw(values)} for n in env_names]
    if draw(st.booleans()):
        field_ref = {"fieldPath": "metadata.annotations['kube-rdma.io/gid-index']"}
        container.setdefault("env", []).append(
            {"name": "NCCL_IB_GID_INDEX", "valueFrom": {"fieldRef": field_ref}}
        )
    if draw(st.booleans()):
        container["volumeMounts"] = [{"name": "own-shm", "mountPath": "/dev/shm"}]
    caps: Json = {}
    if draw(st.booleans()):
        caps["add"] = draw(st.lists(st.sampled_from(["IPC_LOCK", "SYS_PTRACE"]), unique=True))
    if draw(st.booleans()):
        caps["drop"] = draw(st.lists(st.sampled_from(["ALL", "IPC_LOCK"]), unique=True))
    if caps:
        container["securityContext"] = {"capabilities": caps}
    return container


@st.composite
def training_pods(draw: st.DrawFn) -> Json:
    count = draw(st.integers(1, 3))
    spec: Json = {"containers": [draw(containers(f"c{i}")) for i in range(count)]}
    if draw(st.booleans()):
        spec["initContainers"] = [draw(containers("init"))]
    if any(m for c in spec["containers"] for m in c.get("volumeMounts", [])):
        spec["volumes"] = [
            {
                "name": "own-shm",
                "emptyDir": draw(st.sampled_from([{}, {"medium": "Memory", "sizeLimit": "1Gi"}])),
            }
        ]
    annotations: Json = {}
    choice = draw(st.sampled_from(["inject", "profile", "none"]))
    if choice == "inject":
        annotations["kube-rdma.io/inject"] = "true"
    elif choice == "profile":
        annotations["kube-rdma.io/profile"] = draw(st.sampled_from(PROFILE_NAMES))
    if draw(st.booleans()):
        rails = draw(st.lists(st.integers(1, 8), unique=True, min_size=1, max_size=3))
        owner = draw(st.sampled_from(["kube-rdma/rail", "spiderpool/hca"]))
        space, prefix = owner.split("/")
        if draw(st.booleans()):
            entries = [{"name": f"{prefix}{r}", "namespace": space} for r in rails]
            annotations["k8s.v1.cni.cncf.io/networks"] = orjson.dumps(entries).decode()
        else:
            annotations["k8s.v1.cni.cncf.io/networks"] = ",".join(f"{owner}{r}" for r in rails)
    if draw(st.booleans()):
        annotations["kube-rdma.io/containers"] = draw(st.sampled_from(["c0", "c0,init", "init"]))
    if draw(st.booleans()):
        spec["hostNetwork"] = draw(st.booleans())
    if draw(st.booleans()):
        spec["securityContext"] = {"runAsUser": draw(st.sampled_from([0, 1000]))}
    namespace = draw(st.sampled_from(["team-a", "ml-training", "locked", "strict"]))
    metadata: Json = {
        "generateName": "job-worker-",
        "namespace": namespace,
        "labels": {"training.kubeflow.org/job-name": "job"},
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pod=training_pods())
async def test_second_pass_yields_no_patch(pod: Json, tmp_path: Path) -> None:
    review = admitter(tmp_path)
    first_request = pods.request(pod)
    first = await review.review(first_request)
    event(first.outcome)
    if first.outcome == "denied":
        return
    once = apiserver.stored(patched(first_request, first.response))
    second = await review.review(pods.request(once, uid="second"))
    assert second.outcome in ("unchanged", "not-selected", "ignored"), second.response
    assert "patch" not in second.response["response"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(
    old=st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=5),
    new=st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=5),
)
def test_diff_turns_old_into_new(old: Json, new: Json) -> None:
    assert jsonpatch.apply_patch(old, diff(old, new)) == new


def other_webhook(pod: Json) -> Json:
    """What a service-mesh or logging webhook does: sidecars, env, volumes, annotations."""
    pod = copy.deepcopy(pod)
    spec = pod["spec"]
    spec.setdefault("initContainers", []).append({"name": "mesh-init", "image": "mesh:1"})
    spec["containers"].append({"name": "mesh-proxy", "image": "mesh:1"})
    spec["containers"][0].setdefault("env", []).append({"name": "MESH_ENABLED", "value": "1"})
    spec.setdefault("volumes", []).append({"name": "mesh-certs", "emptyDir": {}})
    pod["metadata"]["annotations"]["mesh.example.com/injected"] = "true"
    return pod


async def test_reinvocation_after_another_webhook_changes_nothing(tmp_path: Path) -> None:
    review = admitter(tmp_path)
    pod = pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/profile": "rails8"})
    first_request = pods.request(pod)
    ours = patched(first_request, (await review.review(first_request)).response)
    theirs = other_webhook(ours)
    again = await review.review(pods.request(theirs, uid="reinvoked"))
    assert again.outcome == "unchanged"
    assert "patch" not in again.response["response"]


async def test_running_after_another_webhook_adds_each_item_once(tmp_path: Path) -> None:
    review = admitter(tmp_path)
    pod = other_webhook(pods.sidecar_pod("team-a", {"kube-rdma.io/inject": "true"}))
    first_request = pods.request(pod)
    ours = patched(first_request, (await review.review(first_request)).response)
    trainer, proxy = ours["spec"]["containers"][0], ours["spec"]["containers"][2]
    assert [m["mountPath"] for m in trainer["volumeMounts"]] == [
        "/data",
        "/dev/infiniband",
        "/dev/shm",
    ]
    assert [e["name"] for e in trainer["env"]] == [
        "MESH_ENABLED",
        "NCCL_IB_DISABLE",
        "NCCL_IB_ROCE_VERSION_NUM",
        "NCCL_IB_ADDR_FAMILY",
    ]
    assert proxy == {"name": "mesh-proxy", "image": "mesh:1"}
    assert [v["name"] for v in ours["spec"]["volumes"]] == [
        "data",
        "mesh-certs",
        "kube-rdma-infiniband",
        "kube-rdma-shm",
    ]


async def test_memory_limit_set_later_resizes_shm_in_place(tmp_path: Path) -> None:
    review = admitter(tmp_path)
    pod = pods.pytorchjob("worker", 0, "team-a", {"kube-rdma.io/inject": "true"})
    del pod["spec"]["containers"][0]["resources"]["limits"]["memory"]
    first_request = pods.request(pod)
    first = await review.review(first_request)
    assert first.response["response"]["warnings"] == [
        "kube-rdma: no memory limit set, so /dev/shm gets the fallback size 16Gi; set a memory "
        "limit to size it from that"
    ]
    ours = patched(first_request, first.response)
    ours["spec"]["containers"][0]["resources"]["limits"]["memory"] = "64Gi"
    again = await review.review(pods.request(ours, uid="reinvoked"))
    ops = orjson.loads(base64.b64decode(again.response["response"]["patch"]))
    assert ops == [{"op": "replace", "path": "/spec/volumes/1/emptyDir/sizeLimit", "value": "32Gi"}]


async def test_resolver_runs_before_the_init_container_that_reads_its_file(tmp_path: Path) -> None:
    review = admitter(tmp_path)
    annotations = {"kube-rdma.io/profile": "roce-pod", "kube-rdma.io/containers": "fetch-dataset"}
    first_request = pods.request(pods.sidecar_pod("team-a", annotations))
    ours = apiserver.stored(patched(first_request, (await review.review(first_request)).response))
    assert [c["name"] for c in ours["spec"]["initContainers"]] == [
        "kube-rdma-nccl-conf",
        "fetch-dataset",
    ]
    again = await review.review(pods.request(ours, uid="second"))
    assert again.outcome == "unchanged"
