"""The webhook end to end over HTTPS: realistic pods in, exact RDMA-ready pods out.

Every response's patch is applied with the `jsonpatch` package to the request object, the result
is compared with the exact expected pod, and validated against the schemas of the oldest
Kubernetes kube-rdma supports (1.33) and the newest.
"""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest

from kube_rdma.core.objects import Json
from testbed.builders import pods
from testbed.webhook_cases import Case, check_case
from tests.conftest import Serve
from webhook.app import Settings
from webhook.profiles import parse_profiles

PROFILES = parse_profiles(pods.PROFILES_YAML, "test")
AUTO_ENV = [
    {"name": "NCCL_IB_DISABLE", "value": "0"},
    {"name": "NCCL_IB_ROCE_VERSION_NUM", "value": "2"},
    {"name": "NCCL_IB_ADDR_FAMILY", "value": "AF_INET"},
]
RAILS8_ENV = [
    {"name": "NCCL_IB_DISABLE", "value": "0"},
    {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
    {"name": "NCCL_IB_HCA", "value": "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"},
    {"name": "NCCL_IB_ROCE_VERSION_NUM", "value": "2"},
    {"name": "NCCL_IB_ADDR_FAMILY", "value": "AF_INET"},
    {"name": "NCCL_IB_ADDR_RANGE", "value": "192.168.0.0/16"},
]
IB_MOUNT = {"name": "kube-rdma-infiniband", "mountPath": "/dev/infiniband"}
SHM_MOUNT = {"name": "kube-rdma-shm", "mountPath": "/dev/shm"}
IB_VOLUME = {"name": "kube-rdma-infiniband", "hostPath": {"path": "/dev/infiniband", "type": ""}}
IPC_LOCK = {"capabilities": {"add": ["IPC_LOCK"]}}


def shm_volume(size: str) -> Json:
    return {"name": "kube-rdma-shm", "emptyDir": {"medium": "Memory", "sizeLimit": size}}


DIGESTS = {
    "default": "ffbf4b31ccba",
    "rails8": "6ba7d6ee506b",
    "hostnet": "102887d21839",
    "node": "027a38f75f36",
    "lenient": "2ec2f199bce5",
    "roce-pod": "f9c6738a38b8",
    "roce-pod-env": "c4bbc540950c",
    "sriov": "a9b4c39c01cf",
    "exclude": "085b47c3514f",
}
"""Each test profile's digest (the first 12 hex digits of the sha256 of its canonical JSON),
pinned: a profile whose meaning changes must change its digest, on purpose."""


def applied(profile: str) -> str:
    record = {
        "profile": profile,
        "hash": DIGESTS[profile],
        "network": PROFILES.profiles[profile].network.mode.value,
    }
    return orjson.dumps(record).decode()


def rails(count: int) -> Json:
    return {f"rdma/hca{i}": "1" for i in range(1, count + 1)}


def add_resources(container: Json, extra: Json) -> None:
    container["resources"]["limits"].update(extra)
    container["resources"]["requests"].update(extra)


def _default_master(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("default")
    c = pod["spec"]["containers"][0]
    add_resources(c, {"rdma/hca": "1"})
    c["volumeMounts"] = [IB_MOUNT, SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] += AUTO_ENV
    pod["spec"]["volumes"] = [IB_VOLUME, shm_volume("256Gi")]


def _default_worker(pod: Json) -> None:
    pod["metadata"]["annotations"] = {"kube-rdma.io/applied": applied("default")}
    c = pod["spec"]["containers"][0]
    add_resources(c, {"rdma/hca": "1"})
    c["volumeMounts"] = [IB_MOUNT, SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] += AUTO_ENV
    pod["spec"]["volumes"] = [IB_VOLUME, shm_volume("100Gi")]


def _rails8(pod: Json, gpus: int) -> None:
    annotations = pod["metadata"]["annotations"]
    annotations["kube-rdma.io/applied"] = applied("rails8")
    annotations["k8s.v1.cni.cncf.io/networks"] = ",".join(
        f"kube-rdma/rail{i}" for i in range(1, gpus + 1)
    )
    c = pod["spec"]["containers"][0]
    add_resources(c, rails(gpus))
    c["volumeMounts"] = [SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] = [*c.get("env", []), *RAILS8_ENV]
    pod["spec"]["volumes"] = [shm_volume("64Gi")]


def _mpijob_worker(pod: Json) -> None:
    _rails8(pod, 8)
    pod["spec"]["schedulerName"] = "rdma-scheduler"


def _jobset(pod: Json) -> None:
    _rails8(pod, 4)
    pod["spec"]["schedulerName"] = "rdma-scheduler"


def _sidecars(pod: Json) -> None:
    pod["metadata"]["annotations"] = {"kube-rdma.io/applied": applied("default")}
    trainer = pod["spec"]["containers"][0]
    add_resources(trainer, {"rdma/hca": "1"})
    trainer["volumeMounts"] += [IB_MOUNT, SHM_MOUNT]
    trainer["securityContext"] = IPC_LOCK
    trainer["env"] = AUTO_ENV
    pod["spec"]["volumes"] += [IB_VOLUME, shm_volume("256Gi")]


def _preset(pod: Json) -> None:
    annotations = pod["metadata"]["annotations"]
    annotations["kube-rdma.io/applied"] = applied("rails8")
    annotations["k8s.v1.cni.cncf.io/networks"] = orjson.dumps(
        [{"name": "rail1", "namespace": "kube-rdma", "interface": "net1"}]
        + [{"name": f"rail{i}", "namespace": "kube-rdma"} for i in range(2, 9)]
    ).decode()
    c = pod["spec"]["containers"][0]
    c["env"] += [e for e in RAILS8_ENV if e["name"] != "NCCL_SOCKET_IFNAME"]
    pod["spec"]["schedulerName"] = "rdma-scheduler"


def _hostnet(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("hostnet")
    c = pod["spec"]["containers"][0]
    add_resources(c, {"rdma/hca": "1"})
    c["volumeMounts"] = [IB_MOUNT, SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] += [
        {"name": "NCCL_IB_DISABLE", "value": "0"},
        {"name": "NCCL_SOCKET_IFNAME", "value": "=bond0"},
        {"name": "NCCL_IB_HCA", "value": "=mlx5_0:1,mlx5_1:1"},
        {"name": "NCCL_IB_GID_INDEX", "value": "3"},
        {"name": "NCCL_DEBUG", "value": "WARN"},
    ]
    pod["spec"]["volumes"] = [IB_VOLUME, shm_volume("100Gi")]
    pod["spec"]["hostNetwork"] = True
    pod["spec"]["dnsPolicy"] = "ClusterFirstWithHostNet"


def _node(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("node")
    c = pod["spec"]["containers"][0]
    add_resources(c, {"rdma/rdma_shared_device_a": "1"})
    c["volumeMounts"] = [SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] = [
        {"name": "NCCL_IB_DISABLE", "value": "0"},
        {
            "name": "NCCL_IB_GID_INDEX",
            "valueFrom": {
                "fieldRef": {
                    "apiVersion": "v1",
                    "fieldPath": "metadata.annotations['kube-rdma.io/gid-index']",
                }
            },
        },
        {
            "name": "NCCL_IB_HCA",
            "valueFrom": {
                "fieldRef": {
                    "apiVersion": "v1",
                    "fieldPath": "metadata.annotations['kube-rdma.io/hca']",
                }
            },
        },
    ]
    pod["spec"]["volumes"] = [shm_volume("256Gi")]


def _lenient(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("lenient")
    c = pod["spec"]["containers"][0]
    add_resources(c, {"rdma/hca": "1"})
    c["volumeMounts"] = [SHM_MOUNT]
    c["env"] += AUTO_ENV
    pod["spec"]["volumes"] = [shm_volume("100Gi")]


INJECT = {"kube-rdma.io/inject": "true"}


def profile(name: str) -> Json:
    return {"kube-rdma.io/profile": name}


MPI_ENV_ONLY = (
    "kube-rdma: this pod looks like an MPIJob worker: the NCCL variables kube-rdma adds to env do "
    "not reach the ranks mpirun starts over ssh (a fresh environment); use a profile with "
    "gid.strategy: pod, which writes them to /etc/nccl.conf, or have mpirun pass them on (-x NAME)"
)

CASES = [
    Case(
        "pytorchjob-master",
        pods.pytorchjob("master", 0, "team-a", INJECT),
        _default_master,
        ["kube-rdma: /dev/shm is 256Gi, set by shm.max instead of 0.5 of the 1600Gi memory limit"],
    ),
    Case(
        "pytorchjob-worker-namespace-opt-in",
        pods.pytorchjob("worker", 0, "ml-training", {}),
        _default_worker,
    ),
    Case("mpijob-launcher-no-gpu", pods.mpijob_launcher("ml-training"), None),
    Case(
        "mpijob-worker-8-rails",
        pods.mpijob_worker("team-a", profile("rails8")),
        _mpijob_worker,
        [MPI_ENV_ONLY],
    ),
    Case("jobset-4-gpus-4-rails", pods.jobset_pod("team-a", profile("rails8")), _jobset),
    Case(
        "volcano-keeps-its-scheduler",
        pods.volcano_pod("team-a", profile("rails8")),
        lambda pod: _rails8(pod, 8),
        [
            "kube-rdma: pod uses scheduler volcano, not rdma-scheduler; RDMA-aware placement is "
            "skipped"
        ],
    ),
    Case("sidecars-untouched", pods.sidecar_pod("ml-training", {}), _sidecars),
    Case(
        "user-values-kept",
        pods.preset_pod("team-a", profile("rails8")),
        _preset,
        [
            "kube-rdma: container trainer already requests rdma/hca_shared_devices_a, so no RDMA "
            "resource was added",
            "kube-rdma: container trainer mounts its own /dev/shm volume dshm without a sizeLimit; "
            "kept as it is",
            "kube-rdma: container trainer keeps its own NCCL_SOCKET_IFNAME instead of the "
            "profile's",
        ],
    ),
    Case(
        "hostnetwork-fixed-gid",
        pods.pytorchjob("worker", 2, "team-a", profile("hostnet")),
        _hostnet,
    ),
    Case(
        "node-gid-from-extender",
        pods.mpijob_worker("team-a", profile("node")),
        _node,
        [
            "kube-rdma: /dev/shm is 256Gi, set by shm.max instead of 0.5 of the 1000Gi memory "
            "limit",
            MPI_ENV_ONLY,
        ],
    ),
    Case(
        "baseline-namespace-skips",
        pods.pytorchjob("worker", 1, "locked", profile("lenient")),
        _lenient,
        [
            "kube-rdma: left out capability IPC_LOCK: Pod Security level baseline of namespace "
            "locked forbids it; RDMA memory registration fails unless memlock is unlimited",
            "kube-rdma: left out hostPath volume /dev/infiniband: Pod Security level baseline "
            "of namespace locked forbids it; /dev/infiniband must come from the RDMA device plugin",
        ],
    ),
    Case(
        "opted-out",
        pods.pytorchjob("worker", 3, "ml-training", {"kube-rdma.io/inject": "false"}),
        None,
    ),
    Case("kube-system-never", pods.pytorchjob("worker", 0, "kube-system", INJECT), None),
    Case("own-namespace-never", pods.pytorchjob("worker", 0, "kube-rdma", INJECT), None),
    Case("agent-namespace-never", pods.pytorchjob("worker", 0, "kube-rdma-agent", INJECT), None),
    Case("plans-namespace-never", pods.pytorchjob("worker", 0, "kube-rdma-plans", INJECT), None),
]


@pytest.mark.parametrize("namespace", ["kube-system", "kube-rdma", "kube-rdma-agent", "elsewhere"])
async def test_kube_rdma_s_namespaces_are_never_mutated_wherever_the_webhook_runs(
    namespace: str, serve: Serve, settings: Settings
) -> None:
    """Also when the webhook runs in another namespace (--own-namespace elsewhere), and when a
    hand-edited configuration sends these namespaces' pods: the privileged agent namespace
    above all, where an injected init container would run with the agent's rights."""
    pod = pods.pytorchjob("worker", 0, namespace, {**INJECT, "kube-rdma.io/profile": "rails8"})
    async with serve(replace(settings, own_namespace="elsewhere")) as client:
        response = await client.review(pods.request(pod))
    assert response == {"uid": pods.request(pod)["uid"], "allowed": True}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_pod_is_made_rdma_ready(case: Case, serve: Serve, settings: Settings) -> None:
    await check_case(serve(settings), case)


async def test_inject_without_gpu_container_warns(serve: Serve, settings: Settings) -> None:
    pod = pods.mpijob_launcher("team-a")
    pod["metadata"]["annotations"] = dict(INJECT)
    async with serve(settings) as client:
        response = await client.review(pods.request(pod))
    assert response == {
        "uid": "0b5c3e2a-7f1d-4c88-9a51-3d2e1f0a9b77",
        "allowed": True,
        "warnings": [
            "kube-rdma: no container requests nvidia.com/gpu or gets GPUs from a claim, so "
            "nothing was added; name the containers in the kube-rdma.io/containers annotation"
        ],
    }
