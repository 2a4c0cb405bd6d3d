"""Small snapshot files whose right answers are known by construction."""

from __future__ import annotations

from pathlib import Path

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kubesim.scheduler import Job
from kubesim.simulate.cluster import SimCluster, load_cluster
from testbed.builders.nodes import hgx, node, pod
from testbed.clustergen import write_snapshot


def snapshot(tmp_path: Path, objects: list[Json]) -> SimCluster:
    path = tmp_path / "cluster.json"
    write_snapshot(objects, path)
    return load_cluster(path)


def leaf_node(name: str, leaf: str) -> Json:
    return node(name, hgx(), labels={keys.LEAF: leaf, keys.SPINE: "spine-0"})


def running(name: str, on: str, gpus: int) -> Json:
    return pod(name, gpus=gpus, node_name=on, phase="Running", namespace="busy")


def job(name: str, pods: int, gpus: int, arrival: float, duration: float = 3600.0) -> Job:
    return Job(
        name=name,
        namespace="team",
        members=pods,
        gpus=gpus,
        arrival=arrival,
        duration=duration,
        cpu_per_gpu=0,
        memory_per_gpu_gi=0,
    )
