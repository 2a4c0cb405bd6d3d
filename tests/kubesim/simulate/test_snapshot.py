"""`kube-rdma snapshot` against the fake apiserver, plain and anonymized."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from extender.cluster.snapshot import SnapshotSource
from extender.weights import DEFAULT
from kube_rdma.core import keys
from kube_rdma_cli.dispatch import main
from kubesim.simulate.cluster import load_cluster
from kubesim.simulate.metrics import measure
from kubesim.simulate.run import Settings, Variant, simulate
from testbed.builders.nodes import pod
from testbed.clustergen import ClusterSpec, generate
from testbed.clustergen.dra import dra_form
from testbed.fakeapi import FakeApiServer
from tests.kubesim.simulate.clusters import job

SPEC = ClusterSpec(nodes=4, seed=5, nodes_per_leaf=2, busy_fraction=0.0)


def load(api: FakeApiServer) -> None:
    for obj in generate(SPEC):
        if obj["kind"] == "Node":
            api.create("nodes", obj)
    api.create("pods", pod("trainer-0", gpus=4, node_name="gpu-00001", phase="Running"))
    api.create("pods", pod("waiting", gpus=4))
    api.create("pods", pod("done", gpus=4, node_name="gpu-00002", phase="Succeeded"))


async def snapshot(api: FakeApiServer, tmp_path: Path, *extra: str) -> tuple[Path, str]:
    out = tmp_path / "snapshot.json"
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    argv = ["snapshot", "--kubeconfig", str(kubeconfig), "--out", str(out), *extra]
    # The command runs its own event loop: in a thread of its own, beside the test's.
    status = await asyncio.to_thread(main, argv)
    assert status == 0
    return out, out.read_text()


async def test_running_pods_and_nodes_are_saved(fake_api: FakeApiServer, tmp_path: Path) -> None:
    load(fake_api)
    out, _ = await snapshot(fake_api, tmp_path)
    cluster = load_cluster(out)
    assert [n["metadata"]["name"] for n in cluster.nodes] == [f"gpu-0000{i}" for i in range(4)]
    assert [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in cluster.pods] == [
        ("trainer-0", "gpu-00001")
    ]
    assert keys.TOPOLOGY in cluster.nodes[0]["metadata"]["annotations"]


async def test_anonymized_snapshots_hide_names_and_simulate_alike(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    load(fake_api)
    (tmp_path / "plain").mkdir()
    plain, _ = await snapshot(fake_api, tmp_path / "plain")
    hidden, text = await snapshot(fake_api, tmp_path, "--anonymize")
    for secret in ("gpu-0000", "team-a", "trainer-0", "10.1.0", "enp24s0np0", "0000:19:00.0"):
        assert secret not in text, secret
    document = orjson.loads(text)
    names = [o["metadata"]["name"] for o in document["items"]]
    assert names == ["node-0001", "node-0002", "node-0003", "node-0004", "pod-00001"]
    running = document["items"][-1]
    assert (running["metadata"]["namespace"], running["spec"]["nodeName"]) == (
        "ns-001",
        "node-0002",
    )
    assert document["items"][1]["metadata"]["labels"]["kubernetes.io/hostname"] == "node-0002"
    # Simulations run their own event loop: in a thread of their own, beside the test's.
    assert await asyncio.to_thread(levels, plain) == await asyncio.to_thread(levels, hidden)


def levels(path: Path) -> dict[str, int]:
    jobs = [job("gang", 2, 8, arrival=1.0), job("one", 1, 4, arrival=2.0)]
    cluster = load_cluster(path)
    run = simulate(cluster, jobs, Variant("extender", DEFAULT), Settings())
    found: dict[str, int] = measure(run, jobs, cluster)["gpu_nic_levels"]
    return found


async def test_dra_objects_are_saved_and_read_back(fake_api: FakeApiServer, tmp_path: Path) -> None:
    """A DRA cluster (devices in slices, a running pod's devices in an allocated claim): the
    extender reads the snapshot as it reads the cluster, anonymized or not."""
    for obj in dra_form([o for o in generate(SPEC) if o["kind"] == "Node"]):
        plural = obj["kind"].lower() + ("es" if obj["kind"].endswith("s") else "s")
        fake_api.create(plural, obj, obj["metadata"].get("namespace"))
    results = [
        {"request": "g", "driver": "gpu.nvidia.com", "pool": "gpu-00001", "device": f"gpu-{i}"}
        for i in range(4)
    ]
    selector = {
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-00001"]}]
    }
    status = {
        "allocation": {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [selector]},
        }
    }
    claim = {
        "metadata": {"name": "trainer-0-gpus"},
        "spec": {"devices": {"requests": []}},
        "status": status,
    }
    fake_api.create("resourceclaims", claim, "team-a")
    trainer = pod("trainer-0", gpus=0, rdma={}, node_name="gpu-00001", phase="Running")
    trainer["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "trainer-0-gpus"}]
    fake_api.create("pods", trainer)
    (tmp_path / "plain").mkdir()
    plain, text = await snapshot(fake_api, tmp_path / "plain")
    hidden, secret_free = await snapshot(fake_api, tmp_path, "--anonymize")
    kinds = [o["kind"] for o in orjson.loads(text)["items"]]
    assert (
        kinds.count("ResourceSlice"),
        kinds.count("ResourceClaim"),
        kinds.count("DeviceClass"),
    ) == (8, 1, 2)
    for secret in ("gpu-00001", "trainer-0", "GPU-gpu", "pciBusID", "dra.net/pciAddress"):
        assert secret not in secret_free, secret
    for path, node in ((plain, "gpu-00001"), (hidden, "node-0002")):
        model = SnapshotSource.from_file(path).cluster
        info = model.node(node)
        assert info is not None
        assert (info.allocatable["nvidia.com/gpu"], info.free("nvidia.com/gpu")) == (8, 4)
        assert info.allocatable["rdma/hca"] == 8
