"""The presets' labels, narrowest first, and `auto` picking the vocabulary the nodes carry."""

from __future__ import annotations

import pytest

from extender.levels.vocabularies import PRESETS, Levels, auto_levels, custom_levels


def test_each_preset_lists_its_levels_narrowest_first() -> None:
    assert {name: levels.fabric[:3] for name, levels in PRESETS.items()} == {
        "kube-rdma": ("kube-rdma.io/leaf", "kube-rdma.io/spine", "topology.kubernetes.io/zone"),
        "topograph": (
            "fabric.topograph.run/tier-0",
            "fabric.topograph.run/tier-1",
            "fabric.topograph.run/tier-2",
        ),
        "topograph-v0": (
            "network.topology.nvidia.com/leaf",
            "network.topology.nvidia.com/block",
            "network.topology.nvidia.com/spine",
        ),
        "eks": (
            "topology.k8s.aws/network-node-layer-4",
            "topology.k8s.aws/network-node-layer-3",
            "topology.k8s.aws/network-node-layer-2",
        ),
        "gke": (
            "cloud.google.com/gce-topology-host",
            "cloud.google.com/gce-topology-subblock",
            "cloud.google.com/gce-topology-block",
        ),
        "oci": (
            "oci.oraclecloud.com/rdma.local_block_id",
            "oci.oraclecloud.com/rdma.network_block_id",
            "oci.oraclecloud.com/rdma.hpc_island_id",
        ),
    }
    assert PRESETS["topograph"].nvlink == (
        "accelerator.topograph.run/domain",
        "nvidia.com/gpu.clique",
    )
    assert PRESETS["topograph-v0"].nvlink == (
        "network.topology.nvidia.com/accelerator",
        "nvidia.com/gpu.clique",
    )
    assert PRESETS["eks"].nvlink == ("nvidia.com/gpu.clique", "topology.k8s.aws/ultraserver-id")


# Layer 1's value is the example in docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology;
# the others are made up in its form.
EKS_NODE = {
    "topology.k8s.aws/network-node-layer-1": "nn-e50490a237cb0f01a",
    "topology.k8s.aws/network-node-layer-2": "nn-8f2d26e2a9b8b7c61",
    "topology.k8s.aws/network-node-layer-3": "nn-1d72da2e93b4c1bd1",
    "topology.kubernetes.io/zone": "us-east-2a",
}


@pytest.mark.parametrize(
    ("labels", "source"),
    [
        (EKS_NODE, "auto (eks)"),
        (
            {"fabric.topograph.run/tier-0": "s1", "topology.kubernetes.io/zone": "z"},
            "auto (topograph)",
        ),
        ({"network.topology.nvidia.com/block": "s1"}, "auto (topograph-v0)"),
        ({"cloud.google.com/gce-topology-block": "b"}, "auto (gke)"),
        ({"oci.oraclecloud.com/rdma.local_block_id": "4tjxbt4s6ua"}, "auto (oci)"),
        ({"kube-rdma.io/leaf": "leaf-a"}, "auto (kube-rdma)"),
        ({"topology.kubernetes.io/zone": "z"}, "auto (kube-rdma)"),
        ({}, "auto (kube-rdma)"),
    ],
)
def test_auto_reads_the_vocabulary_the_nodes_carry(labels: dict[str, str], source: str) -> None:
    assert auto_levels([labels, {"kubernetes.io/hostname": "n"}]).source == source


def test_auto_takes_the_vocabulary_most_nodes_carry() -> None:
    nodes = [{"kube-rdma.io/leaf": "a"}] * 3 + [EKS_NODE] * 2
    assert auto_levels(nodes).source == "auto (kube-rdma)"


def test_levels_in_use_and_the_nvlink_domain() -> None:
    levels = PRESETS["topograph"]
    nodes = [
        {"fabric.topograph.run/tier-0": "s1", "nvidia.com/gpu.clique": "uuid.1"},
        {"fabric.topograph.run/tier-2": "s3", "accelerator.topograph.run/domain": "nvl1"},
    ]
    assert levels.in_use(nodes) == [
        "nvlink",
        "fabric.topograph.run/tier-0",
        "fabric.topograph.run/tier-2",
    ]
    assert [levels.nvlink_domain(n) for n in nodes] == ["uuid.1", "nvl1"]
    both = {"accelerator.topograph.run/domain": "nvl1", "nvidia.com/gpu.clique": "uuid.1"}
    assert levels.nvlink_domain(both) == "nvl1"
    assert custom_levels(["rack", "row"]) == Levels(("rack", "row"), source="--domain-label")


def test_an_eks_ultraserver_is_the_nvlink_domain_where_no_clique_is_written() -> None:
    """`topology.k8s.aws/ultraserver-id` as the AWS SageMaker developer guide describes it
    (sagemaker-hyperpod-topology, "EKS topology label"); the clique, where GPU feature
    discovery writes one, names the NVLink partition inside the UltraServer."""
    levels = PRESETS["eks"]
    ultraserver = {**EKS_NODE, "topology.k8s.aws/ultraserver-id": "us-0a1b2c3d"}
    both = {**ultraserver, "nvidia.com/gpu.clique": "uuid.1"}
    assert [levels.nvlink_domain(n) for n in (EKS_NODE, ultraserver, both)] == [
        None,
        "us-0a1b2c3d",
        "uuid.1",
    ]
    assert levels.in_use([EKS_NODE]) == [
        "topology.k8s.aws/network-node-layer-3",
        "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-1",
    ]
    assert levels.in_use([ultraserver])[0] == "nvlink"
