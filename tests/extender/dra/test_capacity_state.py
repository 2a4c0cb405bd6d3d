"""Nodes that differ only in their devices' capacities are told apart: the extender's model
shares verdicts between nodes whose devices read alike, and a selector comparing a capacity
must still pass one and refuse the other."""

from __future__ import annotations

from kube_rdma.core.objects import Json
from testbed.builders import nodes
from tests.extender.dra.test_equivalence import answers
from tests.kube_rdma.core.dra.fixtures import GPU_CLASS, claim, exactly, gpu, pod, slice_

AT_LEAST_40GI = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"


def gpu_node(name: str, memory: str) -> list[Json]:
    devices = [{**gpu(i, name), "capacity": {"memory": {"value": memory}}} for i in range(2)]
    return [nodes.node(name, None, gpus=0), slice_(f"{name}-gpu", name, "gpu.nvidia.com", devices)]


async def test_a_capacity_selector_tells_apart_nodes_alike_but_for_capacity() -> None:
    objects = [
        *gpu_node("a-small", "24Gi"),
        *gpu_node("b-large", "80Gi"),
        GPU_CLASS,
        claim("big", [exactly("g", "gpu.nvidia.com", 1, AT_LEAST_40GI)]),
        {"kind": "Pod", **pod("p", [{"name": "g", "resourceClaimName": "big"}])},
    ]
    found = await answers(objects, ["p"])
    refused = (
        "DRA would refuse: claim default/big request g: node publishes 0 matching GPU(s), needs 1"
    )
    assert found["filter p"] == {
        "Nodes": None,
        "NodeNames": ["b-large"],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {"a-small": refused},
        "Error": "",
    }
