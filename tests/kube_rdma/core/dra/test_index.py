"""Pools and generations as the API defines them; claims holding devices once."""

from __future__ import annotations

import pytest

from kube_rdma.core.dra.index import DraIndex
from kube_rdma.core.dra.kinds import KindRule, parse_rule
from tests.kube_rdma.core.dra.fixtures import claim, gpu, gpu_slice, nic_slice, slice_

GPU = "gpu.nvidia.com"


def test_a_node_counts_the_gpus_and_rdma_nics_of_its_pools() -> None:
    index = DraIndex()
    assert index.replace_slices([gpu_slice("n1"), nic_slice("n1"), gpu_slice("n2", 4)]) == {
        "n1",
        "n2",
    }
    n1, n2 = index.node("n1"), index.node("n2")
    assert n1 is not None
    assert n2 is not None
    assert (n1.count("gpu"), n1.count("nic"), n2.count("gpu"), n2.count("nic")) == (8, 8, 4, 0)


def test_a_dranet_interface_without_rdma_is_not_an_rdma_nic() -> None:
    index = DraIndex()
    index.upsert_slice(slice_("s", "n1", "dra.net", [{"name": "eth0", "attributes": {}}]))
    node = index.node("n1")
    assert node is not None
    assert node.devices == ()


def test_only_the_newest_generation_of_a_pool_counts_and_only_once_complete() -> None:
    index = DraIndex()
    old = slice_("old", "n1", GPU, [gpu(i) for i in range(8)], generation=1)
    index.upsert_slice(old)
    # Generation 2 comes in two slices; while one is seen, the pool is incomplete.
    index.upsert_slice(slice_("a", "n1", GPU, [gpu(i) for i in range(4)], generation=2, count=2))
    node = index.node("n1")
    assert node is not None
    assert (node.count("gpu"), node.notes) == (
        0,
        ("pool n1 of gpu.nvidia.com is incomplete: 1 of 2 ResourceSlices of generation 2 seen",),
    )
    index.upsert_slice(slice_("b", "n1", GPU, [gpu(i) for i in range(4, 6)], generation=2, count=2))
    node = index.node("n1")
    assert node is not None
    assert (node.count("gpu"), node.notes) == (6, ())
    index.delete_slice("old")
    node = index.node("n1")
    assert node is not None
    assert node.count("gpu") == 6


def test_allocated_claims_hold_devices_once_and_admin_access_holds_none() -> None:
    index = DraIndex()
    index.replace_slices([gpu_slice("n1")])
    held = [(GPU, "n1", "gpu-0"), (GPU, "n1", "gpu-1")]
    assert index.upsert_claim(claim("c1", [], allocated=held)) == {"n1"}
    # A second claim naming a held device (shared) does not count it twice.
    index.upsert_claim(claim("c2", [], allocated=[(GPU, "n1", "gpu-1")]))
    admin = claim("c3", [], allocated=[(GPU, "n1", "gpu-5")])
    admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    index.upsert_claim(admin)
    node = index.node("n1")
    assert node is not None
    assert node.in_use("gpu") == 2
    assert index.claim_node(("default", "c1")) == "n1"
    index.delete_claim(("default", "c1"))
    node = index.node("n1")
    assert node is not None
    assert node.in_use("gpu") == 1


def test_pools_published_for_many_nodes_are_not_read() -> None:
    shared = slice_("fabric", "n1", "dra.net", [])
    del shared["spec"]["nodeName"]
    shared["spec"]["allNodes"] = True
    index = DraIndex()
    assert index.upsert_slice(shared) == set()


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("nic=dra.net:rdma=true", KindRule("dra.net", "nic", "dra.net/rdma", True)),
        ("gpu=gpu.nvidia.com:type=gpu", KindRule(GPU, "gpu", "gpu.nvidia.com/type", "gpu")),
        ("gpu=x.io:x.io/index=3", KindRule("x.io", "gpu", "x.io/index", 3)),
    ],
)
def test_kind_rules_from_the_command_line(text: str, rule: KindRule) -> None:
    assert parse_rule(text) == rule


@pytest.mark.parametrize("text", ["cpu=dra.cpu:x=1", "nic=dra.net", "nic=dra.net:rdma", "nic="])
def test_bad_kind_rules_say_what_is_wanted(text: str) -> None:
    with pytest.raises(ValueError, match="is not KIND=DRIVER:ATTRIBUTE=VALUE with KIND gpu or nic"):
        parse_rule(text)


def test_configured_rules_replace_the_defaults() -> None:
    index = DraIndex([KindRule(GPU, "gpu", "gpu.nvidia.com/index", 0)])
    index.replace_slices([gpu_slice("n1"), nic_slice("n1")])
    node = index.node("n1")
    assert node is not None
    assert (node.count("gpu"), node.count("nic")) == (1, 0)
