"""One exact answer for each denial and warning of the admission path: the reserved init
container name, a malformed GPU quantity in a pod opted in by its namespace, a networks
annotation nested too deeply; more GPUs than rails, a pod's own /dev/infiniband, envFrom, a
pod's own file at the NCCL conf path; and a privileged container, which needs no IPC_LOCK."""

from __future__ import annotations

import base64
from collections.abc import Callable

import orjson
import pytest

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import pods
from tests.conftest import Serve
from webhook.app import Settings

Change = Callable[[Json], None]


def opted_in(profile: str | None, change: Change, namespace: str = "team-a") -> Json:
    annotations = {keys.INJECT: "true"} | ({keys.PROFILE: profile} if profile else {})
    pod = pods.pytorchjob("worker", 0, namespace, annotations)
    change(pod)
    return pod


def namespace_opted(change: Change) -> Json:
    """No annotation: ml-training opts its training pods in, and reading the GPUs decides it."""
    pod = pods.pytorchjob("worker", 0, "ml-training", {})
    change(pod)
    return pod


def trainer(pod: Json) -> Json:
    container: Json = pod["spec"]["containers"][0]
    return container


def gpus(count: str) -> Change:
    def change(pod: Json) -> None:
        for kind in ("limits", "requests"):
            trainer(pod)["resources"][kind]["nvidia.com/gpu"] = count

    return change


def own_volume(name: str, mount: Json, volume: Json) -> Change:
    def change(pod: Json) -> None:
        trainer(pod).setdefault("volumeMounts", []).append({"name": name, **mount})
        pod["spec"].setdefault("volumes", []).append({"name": name, **volume})

    return change


def reserved_init(pod: Json) -> None:
    pod["spec"]["initContainers"] = [{"name": "kube-rdma-nccl-conf", "image": "busybox"}]


def deep_networks(pod: Json) -> None:
    pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = "[" * 100_000 + "]" * 100_000


DENIALS = [
    (
        "reserved-init-container",
        opted_in("roce-pod", reserved_init),
        "the pod has its own init container named kube-rdma-nccl-conf, a name kube-rdma "
        "reserves; rename it",
    ),
    (
        "malformed-gpu-quantity-in-an-opted-in-namespace",
        namespace_opted(gpus("eight")),
        "'eight' is not a Kubernetes quantity (expected e.g. 16Gi, 512Mi, 1G or 8); fix the "
        "pod's resources",
    ),
    (
        "networks-nested-too-deeply",
        opted_in("rails8", deep_networks),
        "k8s.v1.cni.cncf.io/networks is nested too deeply; fix the annotation so kube-rdma can "
        "add the rail networks",
    ),
]


@pytest.mark.parametrize(("pod", "message"), [d[1:] for d in DENIALS], ids=[d[0] for d in DENIALS])
async def test_denials(pod: Json, message: str, serve: Serve, settings: Settings) -> None:
    async with serve(settings) as client:
        answer = await client.review(pods.request(pod))
    assert answer == {
        "uid": pods.request(pod)["uid"],
        "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": message},
    }


HUGE = "A" * 300_000  # an annotation value may be up to 256 KiB; the apiserver passes denials on


def annotated(key: str, value: str) -> Change:
    def change(pod: Json) -> None:
        pod["metadata"]["annotations"][key] = value

    return change


ECHOES = [
    ("inject-value", opted_in(None, annotated(keys.INJECT, HUGE)), f"{keys.INJECT} must be"),
    ("profile-name", opted_in(None, annotated(keys.PROFILE, HUGE)), "RDMA profile 'AAA"),
    (
        "container-names",
        opted_in(None, annotated(keys.CONTAINERS, ",".join([HUGE[:5000]] * 60))),
        f"{keys.CONTAINERS} names AAA",
    ),
]


@pytest.mark.parametrize(("pod", "start"), [e[1:] for e in ECHOES], ids=[e[0] for e in ECHOES])
async def test_a_denial_quotes_the_request_capped(
    pod: Json, start: str, serve: Serve, settings: Settings
) -> None:
    """Each value quoted is cut at 256 bytes and the whole message at 1 KiB, marked where cut."""
    async with serve(settings) as client:
        answer = await client.review(pods.request(pod))
    assert answer["allowed"] is False
    message = answer["status"]["message"]
    assert message.startswith(start)
    assert "…(truncated)" in message
    assert len(message.encode()) <= 1024
    assert "A" * 257 not in message


def test_every_message_of_a_review_is_capped_at_1_kib() -> None:
    from webhook import review

    long = "é" * 5000
    for answer in (
        review.denied("u", long, [long]),
        review.invalid("u", long),
        review.errored("u", long),
    ):
        response = answer["response"]
        assert response["status"]["message"].endswith("…(truncated)")
        assert len(response["status"]["message"].encode()) <= review.MESSAGE_LIMIT
        for warning in response.get("warnings", []):
            assert len(warning.encode()) <= review.MESSAGE_LIMIT
    assert review.denied("u", "short")["response"]["status"]["message"] == "short"


WARNINGS = [
    (
        "more-gpus-than-rails",
        opted_in("rails8", gpus("16")),
        "kube-rdma: container pytorch requests 16 GPUs but the profile has 8 rails; it gets all 8",
    ),
    (
        "own-dev-infiniband",
        opted_in(
            None,
            own_volume(
                "my-ib", {"mountPath": "/dev/infiniband"}, {"hostPath": {"path": "/dev/infiniband"}}
            ),
        ),
        "kube-rdma: container pytorch mounts its own /dev/infiniband (my-ib); kept as it is",
    ),
    (
        "env-from",
        opted_in(None, lambda p: trainer(p).update(envFrom=[{"configMapRef": {"name": "nccl"}}])),
        "kube-rdma: container pytorch uses envFrom; the NCCL variables kube-rdma adds to env take "
        "precedence there, set them in env to choose your own",
    ),
    (
        "own-file-at-the-nccl-conf-path",
        opted_in(
            "roce-pod",
            own_volume(
                "my-conf",
                {"mountPath": "/etc/nccl.conf", "subPath": "nccl.conf"},
                {"configMap": {"name": "nccl"}},
            ),
        ),
        "kube-rdma: container pytorch mounts its own /etc/nccl.conf (my-conf); kept, so it does "
        "not read what kube-rdma-nccl-conf resolves",
    ),
]


@pytest.mark.parametrize(
    ("pod", "warning"), [w[1:] for w in WARNINGS], ids=[w[0] for w in WARNINGS]
)
async def test_warnings(pod: Json, warning: str, serve: Serve, settings: Settings) -> None:
    async with serve(settings) as client:
        answer = await client.review(pods.request(pod))
    assert (answer["allowed"], answer["warnings"]) == (True, [warning])


async def test_a_privileged_container_is_given_no_ipc_lock(
    serve: Serve, settings: Settings
) -> None:
    pod = opted_in(None, lambda p: trainer(p).update(securityContext={"privileged": True}))
    async with serve(settings) as client:
        answer = await client.review(pods.request(pod))
    patch = orjson.loads(base64.b64decode(answer["patch"]))
    assert "warnings" not in answer
    assert [op["path"] for op in patch] == [
        "/metadata/annotations/kube-rdma.io~1applied",
        "/spec/containers/0/env/-",
        "/spec/containers/0/env/-",
        "/spec/containers/0/env/-",
        "/spec/containers/0/resources/limits/rdma~1hca",
        "/spec/containers/0/resources/requests/rdma~1hca",
        "/spec/containers/0/volumeMounts",
        "/spec/volumes",
    ], "no securityContext op: a privileged container has every capability"
