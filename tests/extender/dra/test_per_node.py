"""A request is judged on each node's own devices, never on devices sampled from another node:
on a cluster whose A100 node is listed before its H200 node, a claim for H200 GPUs fits the H200
node only (kube-scheduler's allocator, k8s.io/dynamic-resource-allocation structured/internal/
stable/allocator_stable.go allocateOne, tries the node's own devices), and a class that matches
no device anywhere fails every node instead of being left out."""

from __future__ import annotations

from kube_rdma.core.objects import Json
from testbed.builders import nodes
from tests.extender.dra.test_equivalence import answers
from tests.kube_rdma.core.dra.fixtures import GPU_CLASS, claim, exactly, gpu, pod, slice_

H200 = "NVIDIA H200"


def gpu_node(name: str, product: str) -> list[Json]:
    devices = [gpu(i, name, productName={"string": product}) for i in range(8)]
    return [nodes.node(name, None, gpus=0), slice_(f"{name}-gpu", name, "gpu.nvidia.com", devices)]


def device_class(name: str, expression: str) -> Json:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def cluster(class_name: str) -> list[Json]:
    return [
        *gpu_node("a-a100", "NVIDIA A100-SXM4-80GB"),
        *gpu_node("b-h200", H200),
        GPU_CLASS,
        device_class(
            "h200",
            f'device.driver == "gpu.nvidia.com" && '
            f'device.attributes["gpu.nvidia.com"].productName == "{H200}"',
        ),
        device_class("tpu", 'device.driver == "tpu.google.com"'),
        claim("c", [exactly("g", class_name, 8)]),
        {"kind": "Pod", **pod("p", [{"name": "g", "resourceClaimName": "c"}])},
    ]


async def test_an_h200_claim_fits_only_the_h200_node_though_an_a100_node_comes_first() -> None:
    found = await answers(cluster("h200"), ["p"])
    assert found["filter p"] == {
        "Nodes": None,
        "NodeNames": ["b-h200"],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {
            "a-a100": "DRA would refuse: claim default/c request g: node publishes 0 matching "
            "GPU(s), needs 8"
        },
        "Error": "",
    }


async def test_a_class_matching_no_published_device_fails_every_node() -> None:
    found = await answers(cluster("tpu"), ["p"])
    refused = (
        "DRA would refuse: claim default/c request g: node publishes 0 matching device(s), needs 8"
    )
    assert found["filter p"] == {
        "Nodes": None,
        "NodeNames": [],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {"a-a100": refused, "b-h200": refused},
        "Error": "",
    }
