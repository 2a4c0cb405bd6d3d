"""`kube-rdma diagnose POD` against the fake apiserver: the applied record, the resolver's
output, the node's health, acceptance and GPU-NIC pairing, and the pod's NCCL lines."""

from __future__ import annotations

from pathlib import Path

import orjson
from kubernetes_asyncio import client

from fabric.pod_report import pod_answer, text
from kube_rdma.core import keys
from testbed.builders.nodes import hgx, node, pod
from testbed.fakeapi import FakeApiServer
from webhook.ncclconf import RESOLVER

LOG = Path(__file__).resolve().parent.parent / "fixtures" / "nccl-tests" / "a100-roce-2node.txt"


async def test_a_scheduled_pod_with_nccl_lines(fake_api: FakeApiServer) -> None:
    labels = {keys.RDMA_READY: "true", keys.ACCEPTANCE: keys.ACCEPTANCE_PASSED}
    fake_api.create("nodes", node("gpu-1", hgx("Ethernet", down=(7,)), labels=labels))
    worker = pod("worker-0", node_name="gpu-1", annotations={keys.DEBUG: "true"})
    worker["spec"]["initContainers"] = [{"name": RESOLVER, "image": "kube-rdma"}]
    fake_api.create("pods", worker, "team-a")
    fake_api.logs.set("team-a", "worker-0", LOG.read_text())
    fake_api.logs.set("team-a", "worker-0", "NCCL_IB_GID_INDEX=5\n", container=RESOLVER)
    async with fake_api.api_client() as api:
        answer = await pod_answer(client.CoreV1Api(api), "team-a", "worker-0")
    assert answer["applied"] == orjson.loads(worker["metadata"]["annotations"][keys.APPLIED])
    assert (answer["debug"], answer["nccl_conf"]) == (True, "NCCL_IB_GID_INDEX=5\n")
    assert {k: v for k, v in answer["node"].items() if k != "ports"} == {
        "name": "gpu-1",
        "rdma_ready": "true",
        "acceptance": "passed",
        "acceptance_time": None,
        "topology": True,
        "gdr": None,
        "pairing": {"PIX": 7},
        "usable_rails": 7,
    }
    assert answer["node"]["ports"][7] == "mlx5_7:1 Ethernet DOWN unhealthy 400.0 Gb/s"
    assert (answer["log"]["transport"], answer["log"]["gid_index"]) == ("RoCE", 3)
    lines = text(answer).splitlines()
    assert lines[:3] == [
        "pod team-a/worker-0",
        'applied: {"profile":"default","hash":"fbdbc5dab973","network":"macvlan"}',
        "nccl-conf:",
    ]
    assert (
        "  pairing: 7 GPUs at PIX; GPUDirect RDMA unknown (the node's topology document does not "
        "say)"
    ) in lines


async def test_a_pending_pod_without_nccl_lines(fake_api: FakeApiServer) -> None:
    fake_api.create("pods", pod("worker-1", network=None), "team-a")
    async with fake_api.api_client() as api:
        answer = await pod_answer(client.CoreV1Api(api), "team-a", "worker-1")
    assert (answer["applied"], answer["node"], answer["log"], answer["nccl_conf"]) == (
        None,
        None,
        None,
        None,
    )
    assert text(answer).splitlines()[1:3] == [
        "applied: nothing (not opted in?)",
        "node: not scheduled yet",
    ]
