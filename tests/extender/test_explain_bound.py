"""`explain` of a bound pod: where it is, who bound it and when; its own node judged without it;
a gang bound whole says so instead of "no plan now: ... needs N x"."""

from __future__ import annotations

import orjson

from extender.cluster.trim import trim_pod
from kube_rdma.core import keys
from testbed.builders import nodes
from testbed.builders.gangs import BOUND_AT, bound_member
from tests.extender.test_app import serving

CLUSTER = [nodes.node(f"gpu-{i}", nodes.hgx(), labels={keys.LEAF: "leaf-a"}) for i in (1, 2, 3)]


async def test_a_bound_gang_member_says_where_by_whom_and_when() -> None:
    async with serving([*CLUSTER, bound_member(0, "gpu-1"), bound_member(1, "gpu-2")]) as client:
        _, table = await client.get("/explain?namespace=ml-training&name=finetune-0&format=table")
        _, text = await client.get("/explain?namespace=ml-training&name=finetune-0")
    lines = table.splitlines()
    assert lines[:3] == [
        f"bound to gpu-1 by rdma-scheduler at {BOUND_AT}",
        "pod ml-training/finetune-0: 8 GPUs, RDMA rdma/hca: 1, 8 rails, Ethernet",
        "gang ml-training/finetune of 2 (kube-rdma.io/gang): bound whole: 2 of 2 members bound",
    ]
    assert "0 x" not in table
    assert "no plan now" not in table
    assert lines[4] == "nodes: 2 pass, 1 busy, 0 unsuitable"
    assert lines[7].split()[:2] == ["gpu-1", "pass"]
    assert lines[7].endswith("the pod is bound here; judged without its own requests")
    body = orjson.loads(text)
    assert body["bound"] == {"node": "gpu-1", "scheduler": "rdma-scheduler", "at": BOUND_AT}
    assert body["nodes"][0] == {
        "node": "gpu-1",
        "verdict": "pass",
        "reason": "the pod is bound here; judged without its own requests",
    }
    # Backward compatible: the keys a client read before are all there.
    assert body["gang"]["plan"] is None
    assert "capacity" in body["gang"]
    assert body["summary"] == {"pass": 2, "fail": 1, "unresolvable": 0}


async def test_a_bound_pod_without_condition_or_scheduler_name_is_honest() -> None:
    alone = nodes.pod("solo", node_name="gpu-3", phase="Running")
    half = bound_member(0, "gpu-1", scheduled=False)
    async with serving([*CLUSTER, alone, half, bound_member(1, "")]) as client:
        _, solo = await client.get("/explain?namespace=team-a&name=solo&format=table")
        _, gang = await client.get("/explain?namespace=ml-training&name=finetune-0&format=table")
    assert solo.splitlines()[0] == (
        "bound to gpu-3 by default-scheduler at an unknown time (the pod has no PodScheduled "
        "condition)"
    )
    # One member of two bound: the gang still waits for room for the other.
    assert gang.splitlines()[2].startswith(
        "gang ml-training/finetune of 2 (kube-rdma.io/gang): no plan now"
    )


async def test_a_pod_still_pending_has_no_bound_object() -> None:
    async with serving([*CLUSTER, bound_member(0, ""), bound_member(1, "")]) as client:
        _, text = await client.get("/explain?namespace=ml-training&name=finetune-0")
    assert "bound" not in orjson.loads(text)


def test_the_cache_keeps_when_a_pod_was_bound() -> None:
    trimmed = trim_pod(bound_member(0, "gpu-1"))
    assert trimmed["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": BOUND_AT}
    ]
    assert trimmed["spec"]["schedulerName"] == "rdma-scheduler"
