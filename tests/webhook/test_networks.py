"""The webhook on every real network setup, end to end over HTTPS: rails a pod already has,
macvlan and SR-IOV pods under GID strategy `pod`, hostNetwork pods, the Network Operator's
resource names, MPIJob pods, and the settings that would make NCCL fall back to TCP.

Each case asserts the exact pod the apiserver would store and the exact warnings, validates it
against the Kubernetes schemas, and checks that a second pass over the stored pod changes
nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kube_rdma.core.objects import Json
from testbed.builders import network_pods, pods
from testbed.resolver_container import BASE_SETTINGS, resolver
from testbed.webhook_cases import Case, check_case
from tests.conftest import Serve
from tests.webhook import apiserver
from tests.webhook.test_app import (
    AUTO_ENV,
    IB_MOUNT,
    IB_VOLUME,
    INJECT,
    IPC_LOCK,
    SHM_MOUNT,
    add_resources,
    applied,
    profile,
    rails,
    shm_volume,
)
from webhook.app import Settings
from webhook.mutate import Target, mutate
from webhook.profiles import parse_profiles

NETWORKS = "k8s.v1.cni.cncf.io/networks"
OUR_RAILS = ",".join(f"kube-rdma/rail{i}" for i in range(1, 9))
CONF_VOLUME = {"name": "kube-rdma-nccl-conf", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}
ETC_MOUNT = {
    "name": "kube-rdma-nccl-conf",
    "mountPath": "/etc/nccl.conf",
    "subPath": "nccl.conf",
    "readOnly": True,
}
RUN_MOUNT = {"name": "kube-rdma-nccl-conf", "mountPath": "/run/kube-rdma", "readOnly": True}
CONF_FILE_ENV = {"name": "NCCL_CONF_FILE", "value": "/run/kube-rdma/nccl.conf"}
IB_ONLY = [{"name": "NCCL_IB_DISABLE", "value": "0"}, {"name": "NCCL_NET", "value": "IB"}]


def _resolved(pod: Json, name: str, mount: Json, env: list[Json], gpus: int = 8) -> Json:
    """The common part of a pod under strategy `pod` with 8-rail resources and a 64Gi /dev/shm;
    returns the selected container for the case to finish."""
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied(name)
    c: Json = pod["spec"]["containers"][0]
    add_resources(c, rails(gpus))
    c["volumeMounts"] = [*c.get("volumeMounts", []), SHM_MOUNT, mount]
    c["securityContext"] = IPC_LOCK
    c["env"] = [*c.get("env", []), *env]
    pod["spec"]["volumes"] = [*pod["spec"].get("volumes", []), CONF_VOLUME, shm_volume("64Gi")]
    return c


def _spiderpool(pod: Json) -> None:
    c = _resolved(pod, "roce-pod", ETC_MOUNT, IB_ONLY, gpus=0)
    pod["spec"]["initContainers"] = [resolver()]
    pod["spec"]["schedulerName"] = "rdma-scheduler"
    assert c["resources"]["limits"]["spidernet.io/hca_shared_devices"] == "1"


def _macvlan(pod: Json) -> None:
    _resolved(pod, "roce-pod", ETC_MOUNT, IB_ONLY)
    pod["metadata"]["annotations"][NETWORKS] = OUR_RAILS
    pod["spec"]["initContainers"] = [resolver()]
    pod["spec"]["schedulerName"] = "rdma-scheduler"


def _macvlan_env_merge(pod: Json) -> None:
    env = [{"name": "NCCL_IB_DISABLE", "value": "0"}, CONF_FILE_ENV]
    _resolved(pod, "roce-pod-env", RUN_MOUNT, env)
    pod["metadata"]["annotations"][NETWORKS] = "storage/nfs-rwx," + OUR_RAILS
    image = "registry.local:5000/kube-rdma"
    pod["spec"]["initContainers"] = [
        resolver(image, "Always", on_missing="warn", settings=BASE_SETTINGS)
    ]


def _sriov(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("sriov")
    c = pod["spec"]["containers"][0]
    c["volumeMounts"] = [SHM_MOUNT, ETC_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] += [{"name": "NCCL_IB_DISABLE", "value": "0"}]
    pod["spec"]["volumes"] = [CONF_VOLUME, shm_volume("100Gi")]
    pod["spec"]["initContainers"] = [resolver(family="ipv6", settings=BASE_SETTINGS)]


def _hostnetwork(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("roce-pod")
    c = pod["spec"]["containers"][0]
    add_resources(c, rails(8))
    c["volumeMounts"] = [SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] += [*IB_ONLY, *AUTO_ENV[1:]]
    pod["spec"]["volumes"] = [shm_volume("64Gi")]
    pod["spec"]["schedulerName"] = "rdma-scheduler"


def _hostdev(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("default")
    c = pod["spec"]["containers"][0]
    c["volumeMounts"] = [IB_MOUNT, SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] += AUTO_ENV
    pod["spec"]["volumes"] = [IB_VOLUME, shm_volume("100Gi")]


def _mpi_worker(name: str, mount: Json, env: list[Json], init: Json) -> Callable[[Json], None]:
    def expect(pod: Json) -> None:
        _resolved(pod, name, mount, env)
        pod["metadata"]["annotations"][NETWORKS] = OUR_RAILS
        pod["spec"]["initContainers"] = [init]
        if name == "roce-pod":
            pod["spec"]["schedulerName"] = "rdma-scheduler"

    return expect


def _preset_override(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("roce-pod")
    pod["metadata"]["annotations"][NETWORKS] = (
        '[{"name":"rail1","namespace":"kube-rdma","interface":"net1"}'
        + "".join(f',{{"name":"rail{i}","namespace":"kube-rdma"}}' for i in range(2, 9))
        + "]"
    )
    c = pod["spec"]["containers"][0]
    c["volumeMounts"] += [ETC_MOUNT]
    c["env"] += IB_ONLY
    pod["spec"]["volumes"] += [CONF_VOLUME]
    pod["spec"]["initContainers"] = [resolver()]
    pod["spec"]["schedulerName"] = "rdma-scheduler"


def _hand_tuned(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("rails8")
    pod["metadata"]["annotations"][NETWORKS] = OUR_RAILS
    c = pod["spec"]["containers"][0]
    add_resources(c, rails(8))
    c["volumeMounts"] = [SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] += [
        {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
        {"name": "NCCL_IB_ROCE_VERSION_NUM", "value": "2"},
        {"name": "NCCL_IB_ADDR_FAMILY", "value": "AF_INET"},
        {"name": "NCCL_IB_ADDR_RANGE", "value": "192.168.0.0/16"},
    ]
    pod["spec"]["volumes"] = [shm_volume("64Gi")]
    pod["spec"]["schedulerName"] = "rdma-scheduler"


def _exclude(pod: Json) -> None:
    pod["metadata"]["annotations"]["kube-rdma.io/applied"] = applied("exclude")
    c = pod["spec"]["containers"][0]
    add_resources(c, {"rdma/hca": "1"})
    c["volumeMounts"] = [IB_MOUNT, SHM_MOUNT]
    c["securityContext"] = IPC_LOCK
    c["env"] += [
        *IB_ONLY,
        {"name": "NCCL_IB_HCA", "value": "^=mlx5_bond_0"},
        *AUTO_ENV[1:],
    ]
    pod["spec"]["volumes"] = [IB_VOLUME, shm_volume("100Gi")]


MPI_ENV_WARNING = (
    "kube-rdma: this pod looks like an MPIJob worker: NCCL_CONF_FILE does not reach the ranks "
    "mpirun starts over ssh, so they miss the settings kube-rdma resolves; use a profile with "
    "gid.confPath: etc, which mounts them at /etc/nccl.conf"
)
ENV_MODE = [{"name": "NCCL_IB_DISABLE", "value": "0"}, CONF_FILE_ENV]
ENV_RESOLVER = resolver(
    "registry.local:5000/kube-rdma", "Always", on_missing="warn", settings=BASE_SETTINGS
)
HOST_NETWORK_WARNINGS = [
    "kube-rdma: the pod runs in the host's network namespace and sees the host's GID table, so "
    "gid.strategy pod falls back to auto (NCCL 2.21.5 or newer picks the RoCE GID itself)",
    "kube-rdma: the pod runs in the host's network namespace, which Multus does not wire, so "
    "the profile's networks were not added",
    "kube-rdma: the pod runs in the host's network namespace and the profile sets no "
    "network.hostSocketIfname, so NCCL_SOCKET_IFNAME is not set and NCCL picks a host "
    "interface itself",
]

CASES = [
    Case(
        "trainjob-spiderpool-rails-kept",
        network_pods.trainjob_spiderpool("team-a", profile("roce-pod")),
        _spiderpool,
        [
            "kube-rdma: container node already requests spidernet.io/hca_shared_devices, so no "
            "RDMA resource was added",
            "kube-rdma: the pod already lists Multus networks ("
            + ", ".join(f"spiderpool/hca{i}" for i in range(1, 9))
            + "); kept them and added none of the profile's networks (network.existing: keep)",
        ],
    ),
    Case(
        "macvlan-pod-strategy",
        pods.pytorchjob("worker", 0, "team-a", profile("roce-pod")),
        _macvlan,
    ),
    Case(
        "macvlan-env-merge",
        pods.pytorchjob(
            "worker", 1, "team-a", {**profile("roce-pod-env"), NETWORKS: "storage/nfs-rwx"}
        ),
        _macvlan_env_merge,
    ),
    Case("sriov-vf", network_pods.sriov_pod("team-a", profile("sriov")), _sriov),
    Case(
        "hostnetwork-falls-back-to-auto",
        network_pods.hostnetwork_pod("team-a", profile("roce-pod")),
        _hostnetwork,
        HOST_NETWORK_WARNINGS,
    ),
    Case(
        "network-operator-hostdev",
        network_pods.network_operator_pod("team-a", INJECT, "nvidia.com/hostdev"),
        _hostdev,
        [
            "kube-rdma: container pytorch already requests nvidia.com/hostdev, so no RDMA "
            "resource was added"
        ],
    ),
    Case(
        "mpijob-v2-worker-etc",
        network_pods.mpijob_v2_worker("team-a", profile("roce-pod")),
        _mpi_worker("roce-pod", ETC_MOUNT, IB_ONLY, resolver()),
    ),
    Case(
        "mpijob-v2-worker-env-warns",
        network_pods.mpijob_v2_worker("team-a", profile("roce-pod-env")),
        _mpi_worker("roce-pod-env", RUN_MOUNT, ENV_MODE, ENV_RESOLVER),
        [MPI_ENV_WARNING],
    ),
    Case(
        "training-operator-mpijob-worker-env-warns",
        pods.mpijob_worker("team-a", profile("roce-pod-env")),
        _mpi_worker("roce-pod-env", RUN_MOUNT, ENV_MODE, ENV_RESOLVER),
        [MPI_ENV_WARNING],
    ),
    Case(
        "mpijob-v2-launcher-untouched",
        network_pods.mpijob_v2_launcher("ml-training", {}),
        None,
    ),
    Case(
        "user-value-overrides-resolved",
        pods.preset_pod("team-a", profile("roce-pod")),
        _preset_override,
        [
            "kube-rdma: container trainer already requests rdma/hca_shared_devices_a, so no RDMA "
            "resource was added",
            "kube-rdma: container trainer mounts its own /dev/shm volume dshm without a "
            "sizeLimit; kept as it is",
            "kube-rdma: container trainer sets NCCL_SOCKET_IFNAME in env, which overrides what "
            "kube-rdma-nccl-conf resolves in the pod's network namespace; remove it to use the "
            "resolved value",
        ],
    ),
    Case(
        "lints-hand-tuned-non-root",
        network_pods.hand_tuned_nonroot("team-a", profile("rails8")),
        _hand_tuned,
        [
            "kube-rdma: container pytorch sets NCCL_IB_GID_INDEX=3 under network mode macvlan, "
            "where each pod's GIDs sit at different indexes, so one index is wrong for most pods; "
            "remove it and let the profile's gid strategy choose",
            "kube-rdma: container pytorch sets NCCL_IB_HCA=mlx5_1,mlx5_2, which NCCL matches by "
            "name prefix (mlx5_1 also matches mlx5_10); write NCCL_IB_HCA==mlx5_1,mlx5_2 to match "
            "exact names",
            "kube-rdma: container pytorch sets NCCL_IB_DISABLE=1, so NCCL uses TCP sockets "
            "instead of RDMA; remove it",
            "kube-rdma: container pytorch runs as non-root (runAsUser 1000), so capability "
            "IPC_LOCK has no effect without ambient capabilities; RDMA memory registration then "
            "needs an unlimited memlock limit from the container runtime",
        ],
    ),
    Case(
        "hca-exclusion-and-require-ib",
        pods.pytorchjob("worker", 2, "team-a", profile("exclude")),
        _exclude,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_pod_is_right_for_its_network(case: Case, serve: Serve, settings: Settings) -> None:
    await check_case(serve(settings), case, apiserver.stored)


def _qos(pod: Json) -> str:
    """The pod's QoS class, by Kubernetes' rules (pkg/apis/core/v1/helper/qos): Guaranteed when
    every container, init containers included, has cpu and memory limits equal to its requests
    (requests default to limits)."""
    spec = pod["spec"]
    containers = [*spec.get("initContainers", []), *spec["containers"]]
    for c in containers:
        limits = c.get("resources", {}).get("limits", {})
        requests = {**limits, **c.get("resources", {}).get("requests", {})}
        if any(r not in limits or requests[r] != limits[r] for r in ("cpu", "memory")):
            return "Burstable"
    return "Guaranteed"


def test_a_guaranteed_pod_stays_guaranteed_with_the_resolver() -> None:
    profiles = parse_profiles(pods.PROFILES_YAML, "profiles.yaml")
    pod = pods.pytorchjob("worker", 0, "team-a", profile("roce-pod"))
    assert _qos(pod) == "Guaranteed"
    out = mutate(pod, "roce-pod", profiles.profiles["roce-pod"], Target("team-a")).pod
    assert [c["name"] for c in out["spec"]["initContainers"]] == ["kube-rdma-nccl-conf"]
    assert _qos(out) == "Guaranteed"
