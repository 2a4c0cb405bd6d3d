"""The extender over HTTP in snapshot mode: exact bodies for every verb and both node modes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from extender import protocol
from extender.app import EXTENDER, Settings, create_app, metrics_app
from extender.cluster.snapshot import SnapshotSource
from kube_rdma.core.objects import Json
from testbed import net
from testbed.builders import nodes
from testbed.fakeapi import eventually

NODES = [
    nodes.node("gpu-1", nodes.hgx()),
    nodes.node("gpu-2", nodes.hgx(down=(3,))),
    nodes.node("gpu-3", nodes.hgx()),
    nodes.node("gpu-4", nodes.hgx(link_layer="InfiniBand")),
]
PODS = [
    nodes.pod("busy", gpus=6, rdma={"rdma/hca": 6}, node_name="gpu-3", phase="Running"),
    nodes.pod("worker-0", node_settings=True),
    nodes.pod("worker-1"),
]
WORKER = nodes.pod("worker-0", node_settings=True)


class Client:
    def __init__(
        self, session: aiohttp.ClientSession, base: str, source: SnapshotSource, metrics: str = ""
    ) -> None:
        self.session, self.base, self.source = session, base, source
        self.metrics = metrics
        """The metrics port's base URL."""

    async def post(self, verb: str, body: Any) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        async with self.session.post(f"{self.base}/{verb}", data=data) as response:
            return response.status, orjson.loads(await response.read())

    async def get(self, path: str) -> tuple[int, str]:
        async with self.session.get(self.base + path) as response:
            return response.status, await response.text()


@contextlib.asynccontextmanager
async def serving(
    objects: list[Json], source_class: type[SnapshotSource] = SnapshotSource
) -> AsyncIterator[Client]:
    """The app in snapshot mode over `objects`, and a client for it."""
    source = source_class(objects)
    app = create_app(Settings(), source)
    async with (
        net.serving(app) as base,
        net.serving(metrics_app(app)) as metrics,
        aiohttp.ClientSession() as s,
    ):
        yield Client(s, base, source, metrics)


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with serving([*NODES, *PODS]) as serving_client:
        yield serving_client


NAMES = ["gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-9"]
FAILED = {
    "gpu-3": "nvidia.com/gpu: 2 of 8 free, pod needs 8",
    "gpu-9": "node is not in the extender's cache yet (just added?); it is retried",
}
UNRESOLVABLE = {
    "gpu-2": "rails down: mlx5_3; 7 of 8 Ethernet ports usable, pod needs 8",
    "gpu-4": "node has 0 Ethernet RDMA ports, pod needs 8 rails",
}


async def test_filter_with_node_names(client: Client) -> None:
    assert await client.post("filter", {"Pod": WORKER, "NodeNames": NAMES, "Nodes": None}) == (
        200,
        {
            "NodeNames": ["gpu-1"],
            "FailedNodes": FAILED,
            "FailedAndUnresolvableNodes": UNRESOLVABLE,
            "Error": "",
            "Nodes": None,
        },
    )


async def test_filter_with_full_nodes_and_any_casing(client: Client) -> None:
    node_list = {"apiVersion": "v1", "kind": "NodeList", "items": NODES}
    status, body = await client.post(
        "filter", {"pod": WORKER, "nodes": node_list, "nodenames": None}
    )
    assert status == 200
    assert body == {
        "NodeNames": ["gpu-1"],
        "FailedNodes": {"gpu-3": FAILED["gpu-3"]},
        "FailedAndUnresolvableNodes": UNRESOLVABLE,
        "Error": "",
        "Nodes": {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": [NODES[0]]},
    }


async def test_prioritize(client: Client) -> None:
    status, body = await client.post("prioritize", {"Pod": WORKER, "NodeNames": ["gpu-1", "gpu-2"]})
    # gpu-1: affinity 10, rate 10, binpack 10 -> 10; gpu-2: affinity 8.75 -> (3*8.75+10+20)/6
    assert (status, body) == (200, [{"Host": "gpu-1", "Score": 10}, {"Host": "gpu-2", "Score": 9}])


async def test_a_pod_without_gpu_or_rdma_passes_everywhere_with_equal_scores(
    client: Client,
) -> None:
    web_pod = nodes.pod("web", gpus=0, rdma={}, network=None)
    _, filtered = await client.post("filter", {"Pod": web_pod, "NodeNames": NAMES[:4]})
    assert filtered["NodeNames"] == NAMES[:4]
    assert filtered["FailedNodes"] == filtered["FailedAndUnresolvableNodes"] == {}
    _, scored = await client.post("prioritize", {"Pod": web_pod, "NodeNames": NAMES[:4]})
    assert scored == [{"Host": n, "Score": 0} for n in NAMES[:4]]


async def test_bind_writes_node_settings_then_binds(client: Client) -> None:
    args = {
        "PodName": "worker-0",
        "PodNamespace": "team-a",
        "PodUID": "uid-worker-0",
        "Node": "gpu-1",
    }
    assert await client.post("bind", args) == (200, {"Error": ""})
    pod = client.source.cluster.pod("team-a", "worker-0")
    assert pod is not None
    assert pod["spec"]["nodeName"] == "gpu-1"
    annotations = pod["metadata"]["annotations"]
    assert annotations["kube-rdma.io/gid-index"] == "3"
    assert annotations["kube-rdma.io/hca"] == "=" + ",".join(f"mlx5_{i}" for i in range(8))
    node = client.source.cluster.node("gpu-1")
    assert node is not None
    assert node.requested == {"nvidia.com/gpu": 8, "rdma/hca": 1}


async def test_bind_without_node_settings_writes_nothing(client: Client) -> None:
    args = {"podname": "worker-1", "podnamespace": "team-a", "poduid": "", "node": "gpu-1"}
    assert await client.post("bind", args) == (200, {"Error": ""})
    pod = client.source.cluster.pod("team-a", "worker-1")
    assert pod is not None
    assert "kube-rdma.io/hca" not in pod["metadata"]["annotations"]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            {"PodName": "ghost", "PodNamespace": "team-a", "PodUID": "", "Node": "gpu-1"},
            "pod team-a/ghost does not exist",
        ),
        (
            {
                "PodName": "worker-0",
                "PodNamespace": "team-a",
                "PodUID": "uid-other",
                "Node": "gpu-1",
            },
            "pod team-a/worker-0 has uid uid-worker-0, not uid-other",
        ),
        (
            {"PodName": "worker-0", "PodNamespace": "team-a", "PodUID": "", "Node": "gpu-4"},
            "node gpu-4 has no usable Ethernet RDMA NIC to configure NCCL with",
        ),
        (
            {"PodName": "worker-0", "PodNamespace": "team-a", "PodUID": "", "Node": "gpu-9"},
            "node gpu-9 is not in the extender's cache",
        ),
    ],
)
async def test_bind_errors(client: Client, args: Json, error: str) -> None:
    assert await client.post("bind", args) == (200, {"Error": error})
    pod = client.source.cluster.pod("team-a", "worker-0")
    assert pod is not None
    assert "nodeName" not in pod["spec"]


MALFORMED = [
    ("filter", b"", "empty body: expected ExtenderArgs JSON"),
    ("filter", b"{", "body is not JSON (line 1, column 2): expected ExtenderArgs"),
    ("prioritize", b"[]", "body is a JSON list, expected ExtenderArgs object"),
    ("filter", b'{"NodeNames": []}', "ExtenderArgs.Pod must be a Pod object with metadata"),
    (
        "filter",
        orjson.dumps({"Pod": WORKER}),
        "ExtenderArgs has neither NodeNames nor Nodes; with nodeCacheCapable: true kube-scheduler "
        "sends NodeNames, otherwise Nodes",
    ),
    (
        "filter",
        orjson.dumps({"Pod": WORKER, "NodeNames": "gpu-1"}),
        "ExtenderArgs.NodeNames must be a list of node names",
    ),
    ("bind", b'{"PodName": "x"}', "ExtenderBindingArgs needs PodNamespace, PodUID, Node"),
    (
        "filter",
        orjson.dumps({"Pod": {"metadata": {}, "spec": "x"}, "NodeNames": NAMES}),
        "ExtenderArgs.Pod is not a Pod: spec is a JSON string, expected an object",
    ),
    (
        "prioritize",
        orjson.dumps({"Pod": {"metadata": {}, "spec": {"containers": [7]}}, "NodeNames": NAMES}),
        "ExtenderArgs.Pod is not a Pod: spec.containers[0] is a JSON number, expected an object",
    ),
    (
        "filter",
        orjson.dumps({"Pod": {**WORKER, "metadata": {"annotations": []}}, "NodeNames": NAMES}),
        "ExtenderArgs.Pod is not a Pod: metadata.annotations is a JSON list, expected an object",
    ),
]


@pytest.mark.parametrize(("verb", "body", "message"), MALFORMED)
async def test_malformed_requests_get_400(
    client: Client, verb: str, body: bytes, message: str
) -> None:
    assert await client.post(verb, body) == (400, {"error": message})


async def test_health_readiness_and_metrics(client: Client) -> None:
    assert await client.get("/healthz") == (200, "ok\n")
    assert await client.get("/readyz") == (200, "ok\n")
    await client.post("filter", {"Pod": WORKER, "NodeNames": NAMES})
    await client.post("filter", b"")
    assert (await client.get("/metrics"))[0] == 404  # not on the verbs' port
    for path in ("/healthz", "/readyz"):
        async with client.session.get(client.metrics + path) as response:
            assert (response.status, await response.text()) == (200, "ok\n")
    async with client.session.post(f"{client.metrics}/filter", data=b"{}") as response:
        assert response.status == 404  # no verb on the metrics port
    async with client.session.get(client.metrics + "/metrics") as response:
        status, text = response.status, await response.text()
    assert status == 200
    assert 'kube_rdma_extender_calls_total{result="ok",verb="filter"} 1.0' in text
    assert 'kube_rdma_extender_calls_total{result="bad-request",verb="filter"} 1.0' in text


async def test_explain(client: Client) -> None:
    status, text = await client.get("/explain?namespace=team-a&name=worker-0")
    assert status == 200
    body = orjson.loads(text)
    assert body["pod"] == "team-a/worker-0"
    assert body["asks"] == {"gpus": 8, "rdma": {"rdma/hca": 1}, "rails": 8, "linkLayer": "Ethernet"}
    assert body["summary"] == {"pass": 1, "fail": 1, "unresolvable": 2}
    assert body["nodes"][0] == {
        "node": "gpu-1",
        "verdict": "pass",
        "scores": {"affinity": 10.0, "rate": 10.0, "binpack": 10.0, "locality": 10.0},
        "total": 10.0,
    }
    assert [n["node"] for n in body["nodes"]] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]
    status, table = await client.get("/explain?namespace=team-a&name=worker-0&format=table")
    assert status == 200
    assert table.splitlines() == [
        "pod team-a/worker-0: 8 GPUs, RDMA rdma/hca: 1, 8 rails, Ethernet",
        "nodes: 1 pass, 1 busy, 2 unsuitable",
        "",
        "NODE   VERDICT     TOTAL  affinity(w3)  rate(w1)  binpack(w2)  locality(w1)  REASON",
        "gpu-1  pass        10.00  10.00         10.00     10.00        10.00",
        "gpu-2  unsuitable  -      -             -         -            -             "
        + UNRESOLVABLE["gpu-2"],
        "gpu-3  busy        -      -             -         -            -             "
        + FAILED["gpu-3"],
        "gpu-4  unsuitable  -      -             -         -            -             "
        + UNRESOLVABLE["gpu-4"],
    ]
    assert await client.get("/explain?namespace=team-a&name=ghost") == (
        404,
        '{"error": "pod team-a/ghost does not exist"}',
    )


async def test_explain_shows_a_gdr_ask_and_the_notes_on_nodes() -> None:
    gdr_pod = nodes.pod("gdr-0", annotations={"kube-rdma.io/require-gdr": "true"})
    objects = [
        nodes.node("gpu-5", nodes.hgx(mtu=9000, mtus={7: 1500}, gdr=nodes.PEERMEM)),
        nodes.node("gpu-6", nodes.hgx(mtu=9000, mtus={0: 4200}, gdr=nodes.NO_GDR)),
        gdr_pod,
    ]
    note5 = "MTU differs between rails: 9000 on 7 rails, 1500 on mlx5_7 (eth7)"
    note6 = "MTU differs between rails: 9000 on 7 rails, 4200 on mlx5_0 (eth0)"
    no_path = (
        "no GPUDirect RDMA: nvidia_peermem is not loaded and there is no dma-buf path; load "
        "nvidia_peermem (modprobe nvidia_peermem, or the GPU Operator's driver.rdma.enabled=true)"
        ", or run the NVIDIA open kernel module on Linux 5.12 or newer for dma-buf"
    )
    async with serving(objects) as client:
        status, text = await client.get("/explain?namespace=team-a&name=gdr-0")
        _, table = await client.get("/explain?namespace=team-a&name=gdr-0&format=table")
    assert status == 200
    body = orjson.loads(text)
    assert body["asks"] == {
        "gpus": 8,
        "rdma": {"rdma/hca": 1},
        "rails": 8,
        "linkLayer": "Ethernet",
        "requireGdr": True,
    }
    assert body["nodes"] == [
        {
            "node": "gpu-5",
            "verdict": "pass",
            "scores": {"affinity": 10.0, "rate": 10.0, "binpack": 10.0, "locality": 10.0},
            "total": 10.0,
            "notes": [note5],
        },
        {"node": "gpu-6", "verdict": "unresolvable", "reason": no_path, "notes": [note6]},
    ]
    assert table.splitlines() == [
        "pod team-a/gdr-0: 8 GPUs, RDMA rdma/hca: 1, 8 rails, Ethernet, GPUDirect RDMA",
        "nodes: 1 pass, 0 busy, 1 unsuitable",
        "",
        "NODE   VERDICT     TOTAL  affinity(w3)  rate(w1)  binpack(w2)  locality(w1)  REASON",
        "gpu-5  pass        10.00  10.00         10.00     10.00        10.00",
        "gpu-6  unsuitable  -      -             -         -            -             " + no_path,
        "",
        "notes:",
        "  gpu-5: " + note5,
        "  gpu-6: " + note6,
    ]


async def test_prioritize_with_full_nodes(client: Client) -> None:
    node_list = {"items": NODES[:2]}
    assert await client.post("prioritize", {"Pod": WORKER, "Nodes": node_list}) == (
        200,
        [{"Host": "gpu-1", "Score": 10}, {"Host": "gpu-2", "Score": 9}],
    )


async def test_weights_file_is_reloaded_and_last_good_kept(tmp_path: Path) -> None:
    weights = tmp_path / "weights.yaml"
    weights.write_text("weights: {affinity: 1, rate: 0, binpack: 0}")
    settings = Settings(weights_file=weights, reload_interval=0.01)
    source = SnapshotSource([*NODES, *PODS])
    app = create_app(settings, source)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    metrics = web.AppRunner(metrics_app(app), access_log=None)
    await metrics.setup()
    await web.TCPSite(metrics, "127.0.0.1", 0).start()
    metrics_base = f"http://127.0.0.1:{metrics.addresses[0][1]}"
    body = orjson.dumps({"Pod": WORKER, "NodeNames": ["gpu-2"]})
    try:
        async with aiohttp.ClientSession() as session:

            async def score() -> Any:
                async with session.post(f"{base}/prioritize", data=body) as response:
                    return (await response.json())[0]["Score"]

            assert await score() == 9  # affinity 8.75 alone
            weights.write_text("weights: {affinity: 0, rate: 1, binpack: 0}")
            await eventually(lambda: source_weight(runner.app) == 1.0)
            assert await score() == 10  # rate alone
            weights.write_text("weights: {affinity: -5}")
            await asyncio.sleep(0.1)
            assert await score() == 10  # the bad file changed nothing
            async with session.get(f"{metrics_base}/metrics") as response:
                text = await response.text()
            assert 'kube_rdma_weights_reloads_total{result="rejected"} 1.0' in text
    finally:
        await metrics.cleanup()
        await runner.cleanup()


def source_weight(app: web.Application) -> float:
    return app[EXTENDER].weights.current.rate


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ({"a": 0.0, "b": 4.5, "c": 4.49, "d": 10.0}, [0, 5, 4, 10]),  # in range: the fast path
        ({"a": -3.0, "b": 4.5, "c": 12.7}, [0, 5, 10]),  # out of range: clamped one by one
    ],
)
def test_host_priorities_round_half_up_and_clamp(
    scores: dict[str, float], expected: list[int]
) -> None:
    assert protocol.host_priorities(scores) == [
        {"Host": host, "Score": score} for host, score in zip(scores, expected, strict=True)
    ]


class Unsynced(SnapshotSource):
    """A source whose first list has not completed (a live source just started)."""

    def ready(self) -> bool:
        return False


async def test_an_extender_that_has_not_read_the_cluster_fails_the_cycle_for_a_retry() -> None:
    """An Error (the cycle fails, kube-scheduler retries after its backoff), not every node
    unresolvable, which would park the pod until the cluster changes."""
    async with serving([*NODES, *PODS], Unsynced) as client:
        status, answer = await client.post("filter", {"Pod": WORKER, "NodeNames": NAMES})
        bind = {"PodName": "w", "PodNamespace": "team-a", "PodUID": "u", "Node": "gpu-1"}
        bound = await client.post("bind", bind)
    starting = "the kube-rdma extender is starting: cluster not read yet; the pod is retried"
    assert (status, answer) == (
        200,
        {
            "NodeNames": [],
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": {},
            "Error": starting,
            "Nodes": None,
        },
    )
    assert bound == (200, {"Error": starting})


async def test_a_pod_already_bound_in_the_cache_is_steered_to_its_node(client: Client) -> None:
    """kube-scheduler retrying a gang member the extender bound at its gang's barrier, before
    its informer shows the binding: the one node that passes is the pod's own."""
    busy = PODS[0]
    status, answer = await client.post("filter", {"Pod": busy, "NodeNames": NAMES})
    reason = "pod team-a/busy is already bound to gpu-3"
    assert (status, answer["NodeNames"], answer["FailedNodes"]) == (200, ["gpu-3"], {})
    assert answer["FailedAndUnresolvableNodes"] == {n: reason for n in NAMES if n != "gpu-3"}
