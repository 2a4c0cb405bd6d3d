"""The live source over HTTP against the fake apiserver, through kubernetes-asyncio: the model
after the initial list, after watch events and after a 410 re-list; binds with their exact
requests, the pod accounted at once, and nothing left behind when a bind fails."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import pytest

from extender.cluster.live import LIST_PAGE_SIZE, NON_TERMINAL, LiveSource
from extender.cluster.model import NodeInfo
from extender.cluster.source import BindError
from extender.cluster.trim import trim_pod
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Gpu, Level, Nic, Pair, Port, Topology, encode
from kube_rdma.kube.errors import ApiError, Conflict, ServerError, Unreachable
from testbed.fakeapi import FakeApiServer, RecordedRequest, eventually

GPU = "nvidia.com/gpu"
RDMA = "rdma/hca"
POD = "/api/v1/namespaces/team-a/pods/w0"
BINDING = POD + "/binding"
TOPOLOGY = Topology(
    gpus=(Gpu(index=0, numa=0), Gpu(index=1, numa=0)),
    nics=(
        Nic(
            name="mlx5_0",
            numa=0,
            ports=(
                Port(port=1, state="ACTIVE", link_layer="InfiniBand", rate_gbps=400, healthy=True),
            ),
        ),
    ),
    pairs=(
        Pair(gpu=0, nic="mlx5_0", level=Level.PIX),
        Pair(gpu=1, nic="mlx5_0", level=Level.PXB),
    ),
    source="sysfs",
)
NCCL = {keys.GID_INDEX: "3", keys.HCA: "=mlx5_0"}


def node(name: str, topology: str | None = encode(TOPOLOGY), gpus: int = 8) -> Json:
    annotations = {} if topology is None else {keys.TOPOLOGY: topology}
    return {
        "metadata": {"name": name, "labels": {"rack": "r1"}, "annotations": annotations},
        "status": {"allocatable": {"cpu": "96", GPU: str(gpus), RDMA: "4"}},
    }


def pod(
    name: str,
    gpus: int,
    *,
    on: str | None = None,
    phase: str = "Pending",
    rdma: int = 0,
    namespace: str = "team-a",
) -> Json:
    limits = {GPU: str(gpus)} | ({RDMA: str(rdma)} if rdma else {})
    spec: Json = {"containers": [{"name": "main", "resources": {"limits": limits}}]}
    if on is not None:
        spec["nodeName"] = on
    return {
        "metadata": {"name": name, "namespace": namespace, "annotations": {"team": "a"}},
        "spec": spec,
        "status": {"phase": phase},
    }


@contextlib.asynccontextmanager
async def running(
    api: Any, sleep: Callable[[float], Awaitable[None]] | None = None
) -> AsyncIterator[LiveSource]:
    """A LiveSource running against `api`, its reflectors' backoff not slept unless `sleep`."""

    async def no_sleep(delay: float) -> None:
        await asyncio.sleep(0)

    source = LiveSource(api, sleep=sleep or no_sleep)
    task = asyncio.create_task(source.run())
    try:
        await eventually(source.ready)
        yield source
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def requested(source: LiveSource, name: str) -> Mapping[str, int] | None:
    info = source.cluster.node(name)
    return None if info is None else info.requested


def writes(api: FakeApiServer) -> list[RecordedRequest]:
    """The requests that were not lists or watches."""
    return [r for r in api.requests if r.method != "GET"]


def uid(api: FakeApiServer, name: str = "w0") -> str:
    return str(api.get("pods", name, "team-a")["metadata"]["uid"])


def stored_annotations(api: FakeApiServer, name: str = "w0") -> Json:
    return dict(api.get("pods", name, "team-a")["metadata"].get("annotations") or {})


def binding(
    pod_uid: str, annotations: Mapping[str, str] | None = None, target: str = "n1"
) -> RecordedRequest:
    metadata: Json = {"name": "w0", "namespace": "team-a", "uid": pod_uid}
    if annotations:
        metadata["annotations"] = dict(annotations)
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": target},
    }
    return RecordedRequest("POST", BINDING, {}, "application/json", body)


async def test_lists_nodes_and_non_terminal_pods(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("nodes", node("n2", topology='{"version": 1, "gpus": 2}', gpus=2))
    fake_api.create("pods", pod("w0", 2, rdma=1, on="n1", phase="Running"))
    fake_api.create("pods", pod("w1", 4, on="n1", phase="Succeeded"))
    fake_api.create("pods", pod("w2", 8))
    fake_api.create("pods", pod("w3", 1, on="n2", namespace="team-b"))
    assert not LiveSource(core_v1).ready()
    async with running(core_v1) as source:
        assert source.cluster.node("n1") == NodeInfo(
            name="n1",
            labels={"rack": "r1"},
            allocatable={GPU: 8, RDMA: 4},
            requested={GPU: 2, RDMA: 1},
            topology=TOPOLOGY,
            topology_error=None,
            pods=frozenset({("team-a", "w0")}),
        )
        n2 = source.cluster.node("n2")
        assert n2 is not None
        assert (n2.allocatable, n2.requested) == ({GPU: 2, RDMA: 4}, {GPU: 1})
        assert n2.pods == frozenset({("team-b", "w3")})
        assert n2.topology is None
        assert (n2.topology_error or "").startswith("malformed kube-rdma.io/topology annotation")
        assert sorted(p["metadata"]["name"] for p in source.cluster.pods()) == ["w0", "w2", "w3"]
    pod_lists = [r.query for r in fake_api.requests if r.path == "/api/v1/pods" and not r.watch]
    assert pod_lists == [{"fieldSelector": NON_TERMINAL, "limit": str(LIST_PAGE_SIZE)}]


async def test_follows_pods_and_nodes_through_the_watch(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("nodes", node("n2"))
    fake_api.create("pods", pod("w0", 2, on="n1", phase="Running"))
    async with running(core_v1) as source:
        await eventually(lambda: fake_api.watching == 2)
        fake_api.create("pods", pod("w1", 4))
        await eventually(lambda: source.cluster.pod("team-a", "w1") is not None)
        assert requested(source, "n1") == {GPU: 2}
        fake_api.bind("team-a", {"metadata": {"name": "w1"}, "target": {"name": "n1"}})
        await eventually(lambda: requested(source, "n1") == {GPU: 6})
        fake_api.patch("pods", "w0", {"status": {"phase": "Succeeded"}}, namespace="team-a")
        await eventually(lambda: requested(source, "n1") == {GPU: 4})
        assert source.cluster.pod("team-a", "w0") is None
        fake_api.delete("pods", "w1", "team-a")
        await eventually(lambda: requested(source, "n1") == {})
        fake_api.delete("nodes", "n2")
        await eventually(lambda: source.cluster.node("n2") is None)
        assert [n.name for n in source.cluster.nodes()] == ["n1"]


async def test_relists_when_the_watch_expired(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("nodes", node("n2"))
    fake_api.create("pods", pod("w0", 2, on="n1", phase="Running"))
    async with running(core_v1) as source:
        await eventually(lambda: fake_api.watching == 2)
        fake_api.end_watches()
        fake_api.delete("pods", "w0", "team-a")
        fake_api.create("pods", pod("w1", 1, on="n2"))
        fake_api.delete("nodes", "n1")
        fake_api.compact()
        await eventually(
            lambda: source.pod_reflector.relists == 1 and source.node_reflector.relists == 1
        )
        await eventually(lambda: fake_api.watching == 2)
        assert source.cluster.node("n1") is None
        assert requested(source, "n2") == {GPU: 1}
        assert [p["metadata"]["name"] for p in source.cluster.pods()] == ["w1"]


async def test_bind_is_one_binding_carrying_the_annotations(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w0", 2))
    async with running(core_v1) as source:
        await source.bind("team-a", "w0", uid(fake_api), "n1", NCCL)
        assert requested(source, "n1") == {GPU: 2}
        model = source.cluster.pod("team-a", "w0")
        assert model is not None
        assert model["spec"]["nodeName"] == "n1"
        assert model["metadata"]["annotations"] == {"team": "a", **NCCL}
        assert writes(fake_api) == [binding(uid(fake_api), NCCL)]
        stored = fake_api.get("pods", "w0", "team-a")
        assert stored["spec"]["nodeName"] == "n1"
        assert stored["metadata"]["annotations"] == {"team": "a", **NCCL}
        # The watch's copy replaces the assumed one, trimmed as every object the model keeps.
        await eventually(lambda: source.cluster.pod("team-a", "w0") == trim_pod(stored))
        assert requested(source, "n1") == {GPU: 2}


async def test_bind_without_annotations(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w0", 2))
    async with running(core_v1) as source:
        await source.bind("team-a", "w0", uid(fake_api), "n1", {})
        assert requested(source, "n1") == {GPU: 2}
        assert writes(fake_api) == [binding(uid(fake_api))]
        assert fake_api.get("pods", "w0", "team-a")["spec"]["nodeName"] == "n1"
        assert stored_annotations(fake_api) == {"team": "a"}


async def test_a_bound_pod_stays_accounted_while_the_watch_lags(
    fake_api: FakeApiServer, core_v1: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_api.create("nodes", node("n1"))  # 101
    fake_api.create("pods", pod("w0", 2))  # 102
    resume = asyncio.Event()
    backoffs: list[float] = []

    async def held(delay: float) -> None:
        backoffs.append(delay)
        await resume.wait()

    async with running(core_v1, sleep=held) as source:
        await eventually(lambda: fake_api.watching == 2)
        fake_api.end_watches()
        await eventually(lambda: len(backoffs) == 2)  # both reflectors wait to watch again
        seen: list[tuple[str, Mapping[str, int] | None]] = []
        upsert = source.cluster.upsert_pod

        def recording(obj: Json) -> None:
            upsert(obj)
            seen.append((obj["metadata"]["resourceVersion"], requested(source, "n1")))

        monkeypatch.setattr(source.cluster, "upsert_pod", recording)
        fake_api.patch("pods", "w0", {"metadata": {"labels": {"x": "1"}}}, namespace="team-a")
        await source.bind("team-a", "w0", uid(fake_api), "n1", NCCL)  # 103 label, 104 bind
        resume.set()
        await eventually(lambda: len(seen) == 3)
    # The bind itself, then the watch's older event (the pod not bound yet), then the binding.
    assert seen == [("102", {GPU: 2}), ("103", {GPU: 2}), ("104", {GPU: 2})]


def inject_500(api: FakeApiServer) -> tuple[type[ApiError], str]:
    api.fail("POST", BINDING, 500)
    return ServerError, "create pods/binding: InternalError: fake apiserver: injected failure"


def bound_elsewhere(api: FakeApiServer) -> tuple[type[ApiError], str]:
    api.patch("pods", "w0", {"spec": {"nodeName": "n2"}}, namespace="team-a")
    return Conflict, (
        'create pods/binding: Conflict: Operation cannot be fulfilled on pods/binding "w0": '
        'pod w0 is already assigned to node "n2"'
    )


@pytest.mark.parametrize("fail", [inject_500, bound_elsewhere], ids=["500", "409"])
async def test_a_failed_binding_leaves_the_pod_as_it_was(
    fake_api: FakeApiServer,
    core_v1: Any,
    fail: Callable[[FakeApiServer], tuple[type[ApiError], str]],
) -> None:
    fake_api.create("pods", pod("w0", 2))
    kind, reason = fail(fake_api)
    fake_api.requests.clear()
    source = LiveSource(core_v1)  # not running: the model cannot know of a bind elsewhere
    with pytest.raises(BindError) as error:
        await source.bind("team-a", "w0", uid(fake_api), "n1", NCCL)
    assert str(error.value) == f"cannot bind pod team-a/w0 to node n1: {reason}"
    assert type(error.value.__cause__) is kind
    assert writes(fake_api) == [binding(uid(fake_api), NCCL)]
    assert stored_annotations(fake_api) == {"team": "a"}
    assert source.cluster.pod("team-a", "w0") is None


async def test_a_pod_the_model_knows_bound_is_not_touched(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w0", 2, on="n2"))
    async with running(core_v1) as source:
        with pytest.raises(BindError) as error:
            await source.bind("team-a", "w0", uid(fake_api), "n1", NCCL)
    assert (
        str(error.value) == "cannot bind pod team-a/w0 to node n1: it is already bound to node n2"
    )
    assert writes(fake_api) == []
    assert stored_annotations(fake_api) == {"team": "a"}


async def test_a_binding_with_a_stale_uid_fails(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w0", 2))
    stale = "00000000-0000-4000-8000-000000000000"
    async with running(core_v1) as source:
        with pytest.raises(BindError) as error:
            await source.bind("team-a", "w0", stale, "n1", {})
        assert str(error.value) == (
            "cannot bind pod team-a/w0 to node n1: create pods/binding: Conflict: "
            f"Precondition failed: UID in precondition: {stale}, "
            f"UID in object meta: {uid(fake_api)}"
        )
        assert writes(fake_api) == [binding(stale)]
        assert requested(source, "n1") == {}


class Interposed:
    """A CoreV1Api whose `method` fails, as a lost connection does, on the calls given an error
    in `errors` (one entry per call, None to let the call through)."""

    def __init__(self, api: Any, method: str, errors: list[BaseException | None]) -> None:
        self._api, self._method, self._errors = api, method, errors

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._api, name)
        if name != self._method:
            return target

        async def call(*args: Any, **kwargs: Any) -> Any:
            error = self._errors.pop(0) if self._errors else None
            if error is not None:
                raise error
            return await target(*args, **kwargs)

        return call


async def test_an_unanswered_binding_is_reported(fake_api: FakeApiServer, core_v1: Any) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w0", 2))
    api = Interposed(core_v1, "create_namespaced_pod_binding", [aiohttp.ServerDisconnectedError()])
    async with running(api) as source:
        with pytest.raises(BindError) as error:
            await source.bind("team-a", "w0", uid(fake_api), "n1", NCCL)
        assert requested(source, "n1") == {}
    assert str(error.value) == (
        "cannot bind pod team-a/w0 to node n1: no answer from the apiserver to the binding "
        "(Server disconnected); the pod may be bound"
    )
    assert type(error.value.__cause__) is Unreachable
    assert writes(fake_api) == []
    assert stored_annotations(fake_api) == {"team": "a"}


async def test_podgroups_are_watched_where_their_crd_exists() -> None:
    from kubernetes_asyncio import client

    from testbed.fakeapi import RESOURCES, Resource

    resources = {
        **RESOURCES,
        "podgroups": Resource("PodGroup", True, "scheduling.x-k8s.io/v1alpha1"),
    }
    async with FakeApiServer(resources) as api, api.api_client() as api_client:
        api.create("podgroups", {"metadata": {"name": "llama"}, "spec": {"minMember": 4}}, "team-a")
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)

        async def no_sleep(delay: float) -> None:
            await asyncio.sleep(0.01)

        source = LiveSource(core, custom_api=custom, sleep=no_sleep)
        task = asyncio.create_task(source.run())
        try:
            size = source.cluster.podgroup_size
            await eventually(lambda: size("scheduling.x-k8s.io", "team-a", "llama") == 4)
            # A missing Volcano CRD does not hold up readiness.
            await eventually(source.ready)
            api.patch("podgroups", "llama", {"spec": {"minMember": 6}}, namespace="team-a")
            await eventually(lambda: size("scheduling.x-k8s.io", "team-a", "llama") == 6)
            api.delete("podgroups", "llama", namespace="team-a")
            await eventually(lambda: size("scheduling.x-k8s.io", "team-a", "llama") is None)
            assert size("scheduling.volcano.sh", "team-a", "llama") is None
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_the_owners_of_training_pods_are_watched_where_their_crds_exist() -> None:
    from kubernetes_asyncio import client

    from extender.cluster.owners import BATCH_JOBS, JOBSETS, PYTORCH_JOBS, VOLCANO_JOBS
    from testbed.fakeapi import RESOURCES, WORKLOAD_RESOURCES

    served = {k: WORKLOAD_RESOURCES[k] for k in ("jobs.batch", "pytorchjobs.kubeflow.org")}
    async with FakeApiServer({**RESOURCES, **served}) as api, api.api_client() as api_client:
        job = {"metadata": {"name": "llama"}, "spec": {"pytorchReplicaSpecs": {}}}
        api.create("pytorchjobs.kubeflow.org", job, "team-a")
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)

        async def no_sleep(delay: float) -> None:
            await asyncio.sleep(0.01)

        source = LiveSource(core, custom_api=custom, sleep=no_sleep)
        owners = source.owners
        task = asyncio.create_task(source.run())
        try:
            await eventually(lambda: owners.find(PYTORCH_JOBS, "team-a", "llama") is not None)
            await eventually(source.ready)
            api.create("jobs.batch", {"metadata": {"name": "qwen-node-0"}}, "team-a")
            await eventually(lambda: owners.find(BATCH_JOBS, "team-a", "qwen-node-0") is not None)
            api.delete("pytorchjobs.kubeflow.org", "llama", namespace="team-a")
            await eventually(lambda: owners.find(PYTORCH_JOBS, "team-a", "llama") is None)
            # A resource whose CRD is absent is never listed, and does not hold up readiness.
            assert (owners.listed(PYTORCH_JOBS), owners.listed(BATCH_JOBS)) == (True, True)
            assert (owners.listed(JOBSETS), owners.listed(VOLCANO_JOBS)) == (False, False)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_a_binding_applied_before_its_answer_was_lost_is_success(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    # The first bind timed out on the caller's side but the apiserver applied it: the retry's
    # 409 names the very node asked for, so the retry succeeds and the pod counts there.
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w0", 2))
    fake_api.patch("pods", "w0", {"spec": {"nodeName": "n1"}}, namespace="team-a")
    fake_api.requests.clear()
    source = LiveSource(core_v1)  # not running: the model has not seen the first bind
    await source.bind("team-a", "w0", uid(fake_api), "n1", NCCL)
    assert writes(fake_api) == [binding(uid(fake_api), NCCL)]


async def test_a_pod_the_model_knows_bound_to_the_same_node_is_bound(
    fake_api: FakeApiServer, core_v1: Any
) -> None:
    fake_api.create("nodes", node("n1"))
    fake_api.create("pods", pod("w0", 2, on="n1"))
    async with running(core_v1) as source:
        await source.bind("team-a", "w0", uid(fake_api), "n1", NCCL)
    assert writes(fake_api) == []
