"""A pod asking for `nvidia.com/gpu` in its containers (and no RDMA), on a node whose GPUs are
DRA devices: kube-scheduler's NodeResourcesFit finds none there unless a DeviceClass serves the
resource (`extendedResourceName`, KEP-5004), so the extender must not plan such a pod onto it
either."""

from __future__ import annotations

import pytest

from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.clustergen.dra import dra_form
from tests.extender.dra.test_equivalence import answers

REFUSED = (
    "the node has its nvidia.com/gpu only as DRA devices, and no DeviceClass serves "
    "nvidia.com/gpu (extendedResourceName): ask for them through a resource claim"
)


def cluster(served: bool) -> list[Json]:
    objects = dra_form([nodes.node("a-dra", None), nodes.node("b-plugins", None)], nodes=["a-dra"])
    for obj in objects:
        if obj["kind"] == "DeviceClass" and not served:
            obj["spec"].pop("extendedResourceName", None)
    pod = {"kind": "Pod", **nodes.pod("p", gpus=8, rdma={}, network=None)}
    return [*objects, pod]


@pytest.mark.parametrize(
    ("served", "passed", "unresolvable"),
    [(False, ["b-plugins"], {"a-dra": REFUSED}), (True, ["a-dra", "b-plugins"], {})],
)
async def test_extended_gpus_fit_a_dra_node_only_where_a_device_class_serves_them(
    served: bool, passed: list[str], unresolvable: dict[str, str]
) -> None:
    found = await answers(cluster(served), ["p"])
    assert found["filter p"] == {
        "Nodes": None,
        "NodeNames": passed,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": unresolvable,
        "Error": "",
    }
