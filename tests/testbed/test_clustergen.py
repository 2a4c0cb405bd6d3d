"""The cluster generator: deterministic, realistic in its proportions, valid Kubernetes objects,
topology documents the agent could have written, and pods that fit the nodes they are bound to."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import kubernetes_validate
import orjson
import pytest

from agent.health import rdma_ready
from agent.sysfs import scan
from extender.cluster.model import Cluster
from extender.cluster.pods import TERMINAL_PHASES, pod_requests
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Level, Port, Topology, decode
from testbed.builders import sysfs_tree
from testbed.clustergen import (
    LEAF_LABEL,
    SPINE_LABEL,
    ZONE_LABEL,
    ClusterSpec,
    generate,
    write_snapshot,
)


def split(objects: list[Json]) -> tuple[list[Json], list[Json]]:
    nodes = [o for o in objects if o["kind"] == "Node"]
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert objects == [*nodes, *pods]  # Nodes first, then Pods
    return nodes, pods


def document(node: Json) -> Topology | None:
    text = node["metadata"]["annotations"].get(keys.TOPOLOGY)
    return None if text is None else decode(text)


def ports(topology: Topology) -> list[Port]:
    return [port for nic in topology.nics for port in nic.ports]


def gpus_of(pod: Json) -> int:
    return pod_requests(pod).get("nvidia.com/gpu", 0)


def running_bound(pods: list[Json]) -> list[Json]:
    return [p for p in pods if p["spec"].get("nodeName") and p["status"]["phase"] == "Running"]


@pytest.fixture(scope="module")
def large() -> tuple[list[Json], list[Json]]:
    """2,000 nodes with the default proportions."""
    return split(generate(ClusterSpec(nodes=2000, seed=7)))


def load(cluster: tuple[list[Json], list[Json]]) -> Cluster:
    state = Cluster()
    state.replace_nodes(cluster[0])
    state.replace_pods(cluster[1])
    return state


@pytest.fixture(scope="module")
def large_cluster(large: tuple[list[Json], list[Json]]) -> Cluster:
    """The large cluster in the extender's model (decoding 2,000 documents takes a while)."""
    return load(large)


@pytest.fixture(scope="module")
def large_documents(
    large: tuple[list[Json], list[Json]], large_cluster: Cluster
) -> list[Topology | None]:
    views = [large_cluster.node(node["metadata"]["name"]) for node in large[0]]
    return [view.topology if view else None for view in views]


@pytest.fixture(scope="module")
def varied() -> tuple[list[Json], list[Json]]:
    """A small cluster with every variant: both link layers, per-rail resources, many faults."""
    spec = ClusterSpec(
        nodes=160,
        seed=3,
        nodes_per_leaf=16,
        leaves_per_spine=2,
        link_layer="mixed",
        rail_down_fraction=0.1,
        flaky_fraction=0.1,
        no_agent_fraction=0.05,
        per_rail_resources=True,
    )
    return split(generate(spec))


# Determinism


def test_same_seed_gives_identical_output() -> None:
    spec = ClusterSpec(nodes=200, seed=11, link_layer="mixed", leaves_per_spine=2)
    assert orjson.dumps(generate(spec)) == orjson.dumps(generate(spec))


def test_another_seed_gives_another_cluster() -> None:
    first, second = generate(ClusterSpec(seed=1)), generate(ClusterSpec(seed=2))
    assert orjson.dumps(first) != orjson.dumps(second)
    assert split(first)[0][0]["metadata"]["uid"] != split(second)[0][0]["metadata"]["uid"]


def test_pod_load_does_not_change_the_nodes() -> None:
    light = split(generate(ClusterSpec(nodes=300, busy_fraction=0.2)))
    heavy = split(generate(ClusterSpec(nodes=300, busy_fraction=0.8)))
    assert light[0] == heavy[0]
    assert len(light[1]) < len(heavy[1])


# Proportions


def test_counts_and_fractions(
    large: tuple[list[Json], list[Json]], large_documents: list[Topology | None]
) -> None:
    nodes, pods = large
    assert [n["metadata"]["name"] for n in nodes] == [f"gpu-{i:05d}" for i in range(2000)]
    present = [d for d in large_documents if d is not None]
    down = [d for d in present if [p.state for p in ports(d)].count("DOWN") == 1]
    flaky = [d for d in present if any(p.state == "ACTIVE" and not p.healthy for p in ports(d))]
    four = [n for n in nodes if n["status"]["allocatable"]["nvidia.com/gpu"] == "4"]
    assert 2000 - len(present) == pytest.approx(10, abs=5)  # 0.5 %
    assert len(down) == pytest.approx(40, abs=12)  # 2 %
    assert len(flaky) == pytest.approx(20, abs=8)  # 1 %
    assert len(four) == pytest.approx(60, abs=15)  # 3 %
    assert all(len(d.nics) == len(d.gpus) for d in present)
    total = sum(int(n["status"]["allocatable"]["nvidia.com/gpu"]) for n in nodes)
    busy = sum(gpus_of(p) for p in running_bound(pods))
    assert busy / total == pytest.approx(0.5, abs=0.01)
    assert {gpus_of(p) for p in running_bound(pods)} == {1, 2, 4, 8}


def test_succeeded_and_pending_pods(large: tuple[list[Json], list[Json]]) -> None:
    pods = large[1]
    phases = Counter(p["status"]["phase"] for p in pods)
    assert set(phases) == {"Running", "Succeeded", "Pending"}
    assert phases["Succeeded"] == 20
    for pod in pods:
        bound = "nodeName" in pod["spec"]
        assert bound == (pod["status"]["phase"] != "Pending"), pod["metadata"]["name"]


def test_network_domains_follow_rack_order(large: tuple[list[Json], list[Json]]) -> None:
    for i, node in enumerate(large[0]):
        labels = node["metadata"]["labels"]
        leaf, spine = i // 32, i // (32 * 8)
        assert labels[LEAF_LABEL] == f"leaf-{leaf:03d}"
        assert labels[SPINE_LABEL] == f"spine-{spine:02d}"
        assert labels[ZONE_LABEL] == f"zone-{spine // 4}"
    assert large[0][-1]["metadata"]["labels"][LEAF_LABEL] == "leaf-062"


# The objects


def test_first_node_exactly() -> None:
    node = split(generate(ClusterSpec(nodes=4, seed=0)))[0][0]
    assert node["metadata"]["labels"] == {
        "kubernetes.io/hostname": "gpu-00000",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "hgx-h100-8g",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "kube-rdma.io/leaf": "leaf-000",
        "kube-rdma.io/spine": "spine-00",
        "topology.kubernetes.io/zone": "zone-0",
        "kube-rdma.io/rdma-ready": "true",
    }
    resources = {"cpu": "192", "memory": "2Ti", "pods": "110", "nvidia.com/gpu": "8"}
    assert node["status"]["allocatable"] == {**resources, "rdma/hca": "8"}
    assert node["status"]["capacity"] == node["status"]["allocatable"]
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert [(c["status"], c["reason"]) for c in ready] == [("True", "KubeletReady")]
    topology = document(node)
    assert topology is not None
    mlx5_2 = topology.nics[2]
    assert (mlx5_2.pci, mlx5_2.numa, mlx5_2.ports[0].netdev) == ("0000:4b:00.0", 0, "enp75s0np0")
    assert [(g.index, g.gid, g.type, g.ip) for g in mlx5_2.ports[0].gids] == [
        (0, "fe80::ac0:ebff:fe10:2", "RoCE v1", "fe80::ac0:ebff:fe10:2"),
        (1, "fe80::ac0:ebff:fe10:2", "RoCE v2", "fe80::ac0:ebff:fe10:2"),
        (2, "::ffff:10.3.0.1", "RoCE v1", "10.3.0.1"),
        (3, "::ffff:10.3.0.1", "RoCE v2", "10.3.0.1"),
    ]


def test_an_hgx_document_matches_the_agents_scan_of_an_hgx_sysfs(tmp_path: Path) -> None:
    """The generated board is the one testbed/builders/sysfs_tree.py builds: same PCI addresses,
    NUMA nodes, netdevs and GPU-NIC levels."""
    sysfs_tree.hgx_8gpu_8nic(tmp_path)
    scanned = scan(tmp_path)
    node = next(n for n in split(generate(ClusterSpec(nodes=8)))[0] if document(n) is not None)
    generated = document(node)
    assert generated is not None
    assert generated.gpus == scanned.gpus
    assert generated.pairs == scanned.pairs
    assert [(n.name, n.pci, n.numa, n.ports[0].netdev) for n in generated.nics] == [
        (n.name, n.pci, n.numa, n.ports[0].netdev) for n in scanned.nics
    ]


def test_every_node_is_a_valid_node(varied: tuple[list[Json], list[Json]]) -> None:
    for node in varied[0]:
        kubernetes_validate.validate(node, "1.33.0", strict=True)


def test_pods_are_valid_pods(
    varied: tuple[list[Json], list[Json]], large: tuple[list[Json], list[Json]]
) -> None:
    sample = random.Random(0).sample(large[1], 150)
    for pod in [*varied[1], *sample]:
        kubernetes_validate.validate(pod, "1.33.0", strict=True)


def test_topology_documents(varied: tuple[list[Json], list[Json]]) -> None:
    boards: Counter[int] = Counter()
    for node in varied[0]:
        topology = document(node)
        if topology is None:
            continue
        boards[len(topology.gpus)] += 1
        assert len(topology.nics) == len(topology.gpus)
        assert len(topology.pairs) == len(topology.gpus) ** 2
        gpu_numa = {g.index: g.numa for g in topology.gpus}
        nic_numa = {n.name: n.numa for n in topology.nics}
        for pair in topology.pairs:
            same_socket = gpu_numa[pair.gpu] == nic_numa[pair.nic]
            expected = Level.NODE if same_socket else Level.SYS
            assert pair.level is (Level.PIX if pair.nic == f"mlx5_{pair.gpu}" else expected)
        assert len([p for p in ports(topology) if not p.healthy]) <= 1
    assert boards == {8: 147, 4: 5}  # 5 % of 160 without the agent; 3 % with 4 GPUs


def test_rdma_ready_label_agrees_with_the_document(
    varied: tuple[list[Json], list[Json]],
    large: tuple[list[Json], list[Json]],
    large_documents: list[Topology | None],
) -> None:
    checked = [*((n, document(n)) for n in varied[0]), *zip(large[0], large_documents, strict=True)]
    for node, topology in checked:
        label = node["metadata"]["labels"].get(keys.RDMA_READY)
        if topology is None:
            assert label is None
        else:
            assert label == ("true" if rdma_ready(topology) else "false")


def test_rail_addresses_are_unique_per_node(large_documents: list[Topology | None]) -> None:
    addresses = Counter(
        gid.ip
        for topology in large_documents
        if topology is not None
        for port in ports(topology)
        for gid in port.gids
    )
    assert max(addresses.values()) == 2  # each address as a v1 and a v2 GID, on one port only
    assert "10.8.7.250" in addresses  # rail 8 of gpu-01999: 10.<rail>.<i // 250>.<i % 250 + 1>


# Link layers and resources


def spine_layers(nodes: list[Json]) -> dict[str, set[str]]:
    """The link layers of each spine's ports."""
    layers: dict[str, set[str]] = {}
    for node in nodes:
        topology = document(node)
        if topology is not None:
            spine = node["metadata"]["labels"][SPINE_LABEL]
            layers.setdefault(spine, set()).update(p.link_layer for p in ports(topology))
    return layers


def test_mixed_cluster_is_infiniband_per_spine(varied: tuple[list[Json], list[Json]]) -> None:
    layers = spine_layers(varied[0])
    assert all(len(found) == 1 for found in layers.values())
    assert Counter(layer for found in layers.values() for layer in found) == {
        "Ethernet": 4,
        "InfiniBand": 1,
    }
    for node in varied[0]:
        topology = document(node)
        if topology is not None and topology.nics[0].ports[0].link_layer == "InfiniBand":
            assert all([g.type for g in p.gids] == ["IB"] for p in ports(topology))
            assert all(p.netdev and p.netdev.startswith("ibp") for p in ports(topology))


def test_pods_carry_the_profile_of_their_nodes_link_layer(
    varied: tuple[list[Json], list[Json]],
) -> None:
    nodes, pods = varied
    layers = spine_layers(nodes)
    spine = {n["metadata"]["name"]: n["metadata"]["labels"][SPINE_LABEL] for n in nodes}
    networks = {"InfiniBand": "ib", "Ethernet": "macvlan"}
    for pod in pods:
        applied = orjson.loads(pod["metadata"]["annotations"][keys.APPLIED])
        assert set(applied) == {"profile", "hash", "network"}
        node = pod["spec"].get("nodeName")
        if node is not None:
            (layer,) = layers[spine[node]]
            assert applied["network"] == networks[layer], pod["metadata"]["name"]


def test_a_jobs_pods_share_one_link_layer(varied: tuple[list[Json], list[Json]]) -> None:
    networks: dict[str, set[str]] = {}
    for pod in varied[1]:
        job = pod["metadata"]["labels"]["training.kubeflow.org/job-name"]
        applied = orjson.loads(pod["metadata"]["annotations"][keys.APPLIED])
        networks.setdefault(job, set()).add(applied["network"])
    assert all(len(found) == 1 for found in networks.values())
    assert {n for found in networks.values() for n in found} == {"ib", "macvlan"}


def test_per_rail_resources(varied: tuple[list[Json], list[Json]]) -> None:
    nodes, pods = varied
    for node in nodes:
        gpus = int(node["status"]["allocatable"]["nvidia.com/gpu"])
        allocatable = node["status"]["allocatable"]
        rdma = {k: v for k, v in allocatable.items() if k.startswith("rdma/")}
        assert rdma == {f"rdma/hca{r}": "1" for r in range(1, gpus + 1)}
    for pod in pods:
        requests = pod_requests(pod)
        gpus = requests["nvidia.com/gpu"]
        rails = [int(k.removeprefix("rdma/hca")) for k in requests if k.startswith("rdma/")]
        # one aligned block of GPU slots, and the rails of those slots
        assert (rails[0] - 1) % gpus == 0
        assert rails == list(range(rails[0], rails[0] + gpus))
        assert all(requests[f"rdma/hca{r}"] == 1 for r in rails)
        multus = pod["metadata"]["annotations"].get("k8s.v1.cni.cncf.io/networks")
        if multus is not None:
            assert multus == ",".join(f"kube-rdma/rail{r}" for r in rails)


def test_shared_rdma_resource(large: tuple[list[Json], list[Json]]) -> None:
    nodes, pods = large
    assert all(n["status"]["allocatable"]["rdma/hca"] in ("4", "8") for n in nodes)
    for pod in pods:
        container = pod["spec"]["containers"][0]["resources"]
        assert container["limits"] == container["requests"]
        assert container["requests"]["rdma/hca"] == "1"


# Loading into the extender


@pytest.mark.parametrize("cluster", ["large", "varied"])
def test_bound_pods_fit_their_nodes(cluster: str, request: pytest.FixtureRequest) -> None:
    nodes, pods = request.getfixturevalue(cluster)
    state = request.getfixturevalue("large_cluster") if cluster == "large" else load((nodes, pods))
    expected: Counter[str] = Counter()
    for pod in running_bound(pods):
        expected[pod["spec"]["nodeName"]] += gpus_of(pod)
    terminal = [p for p in pods if p["status"]["phase"] in TERMINAL_PHASES]
    assert terminal
    assert all(p["spec"].get("nodeName") for p in terminal)
    for info in state.nodes():
        assert info.requested.get("nvidia.com/gpu", 0) == expected[info.name]
        for resource, amount in info.requested.items():
            assert amount <= info.allocatable[resource], (info.name, resource)
    assert sum(len(info.pods) for info in state.nodes()) == len(running_bound(pods))


def test_nodes_without_the_agent_have_no_topology(large_cluster: Cluster) -> None:
    missing = [info for info in large_cluster.nodes() if info.topology is None]
    assert missing
    assert all("no kube-rdma.io/topology annotation" in str(i.topology_error) for i in missing)


def test_snapshot_round_trips(tmp_path: Path) -> None:
    objects = generate(ClusterSpec(nodes=40, seed=5))
    path = tmp_path / "cluster.json"
    write_snapshot(objects, path)
    loaded = orjson.loads(path.read_bytes())
    assert loaded["apiVersion"] == "v1"
    assert loaded["kind"] == "List"
    assert loaded["items"] == objects


# The spec


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"nodes": 0}, "nodes must be 1 to 32768, got 0"),
        ({"nodes_per_leaf": 0}, "nodes_per_leaf must be at least 1, got 0"),
        ({"busy_fraction": 1.5}, "busy_fraction must be between 0 and 1, got 1.5"),
        (
            {"rail_down_fraction": 0.6, "flaky_fraction": 0.6},
            "rail_down, flaky and no_agent fractions pick distinct nodes: sum <= 1",
        ),
        (
            {"link_layer": "mixed"},
            "link_layer mixed varies per spine, and 64 nodes fill one spine of 256: add nodes "
            "or lower leaves_per_spine",
        ),
    ],
)
def test_invalid_specs(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="invalid ClusterSpec") as caught:
        ClusterSpec(**changes)
    assert str(caught.value) == f"invalid ClusterSpec: {message}"


def test_extremes_still_generate() -> None:
    spec = ClusterSpec(
        nodes=1, busy_fraction=1.0, rail_down_fraction=1, flaky_fraction=0, no_agent_fraction=0
    )
    nodes, pods = split(generate(spec))
    topology = document(nodes[0])
    assert topology is not None
    assert [p.state for p in ports(topology)].count("DOWN") == 1
    assert sum(gpus_of(p) for p in running_bound(pods)) == len(topology.gpus)
    idle = split(generate(ClusterSpec(nodes=10, busy_fraction=0.0)))[1]
    assert running_bound(idle) == []


def test_wide_addresses_allow_more_nodes_and_keep_addresses_distinct() -> None:
    with pytest.raises(ValueError, match="nodes must be 1 to 32768"):
        ClusterSpec(nodes=40_000)
    ClusterSpec(nodes=100_000, wide_addresses=True)  # accepted: checked, not generated
    objects = generate(ClusterSpec(nodes=64, seed=2, wide_addresses=True, cpu_pods=50))
    nodes = [o for o in objects if o["kind"] == "Node"]
    cidrs = [n["spec"]["podCIDR"] for n in nodes]
    assert len(set(cidrs)) == len(nodes)
    assert all(c.endswith("/26") for c in cidrs)
    ips = [p["status"]["podIP"] for p in objects if p["kind"] == "Pod" and "podIP" in p["status"]]
    assert ips
    assert all(ip.startswith("10.128.") for ip in ips)
