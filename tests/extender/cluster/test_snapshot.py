"""The snapshot source: the model read from YAML documents, a bare list or a `kind: List`, the
exact messages for files it cannot use, and binds that change the model in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from extender.cluster.model import NodeInfo
from extender.cluster.snapshot import SnapshotError, SnapshotSource
from extender.cluster.source import BindError
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import Gpu, Level, Nic, Pair, Port, Topology, encode

GPU = "nvidia.com/gpu"
RDMA = "rdma/hca"
UID = "6f1c2a1e-0000-4000-8000-000000000001"
TOPOLOGY = Topology(
    gpus=(Gpu(index=0),),
    nics=(
        Nic(
            name="mlx5_0",
            ports=(Port(port=1, state="ACTIVE", link_layer="Ethernet", healthy=True),),
        ),
    ),
    pairs=(Pair(gpu=0, nic="mlx5_0", level=Level.PIX),),
)
NO_TOPOLOGY = f"no {keys.TOPOLOGY} annotation (is the kube-rdma agent running there?)"

DOCUMENTS = f"""\
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {{rack: r1}}
  annotations:
    kube-rdma.io/topology: '{encode(TOPOLOGY)}'
status:
  allocatable: {{cpu: "96", nvidia.com/gpu: "8", rdma/hca: 4}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: ignored}}
---
- apiVersion: v1
  kind: Node
  metadata: {{name: n2}}
  status:
    allocatable: {{nvidia.com/gpu: 4}}
- apiVersion: v1
  kind: Pod
  metadata: {{name: w0, namespace: team-a, uid: {UID}}}
  spec:
    nodeName: n1
    containers:
    - name: main
      resources: {{limits: {{nvidia.com/gpu: 2, rdma/hca: 1}}}}
---
---
apiVersion: v1
kind: Pod
metadata: {{name: w1}}
spec:
  containers:
  - name: main
    resources: {{limits: {{nvidia.com/gpu: 8}}}}
"""


def node(name: str, gpus: int) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {GPU: str(gpus)}},
    }


def pod(name: str, gpus: int, on: str | None = None, phase: str = "Pending") -> Json:
    spec: Json = {"containers": [{"name": "main", "resources": {"limits": {GPU: str(gpus)}}}]}
    if on is not None:
        spec["nodeName"] = on
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "uid": UID, "annotations": {"a": "1"}},
        "spec": spec,
        "status": {"phase": phase},
    }


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    return path


async def test_reads_yaml_documents(tmp_path: Path) -> None:
    source = SnapshotSource.from_file(write(tmp_path, "cluster.yaml", DOCUMENTS))
    assert source.ready()
    await source.run()
    assert sorted(source.cluster.nodes(), key=lambda n: n.name) == [
        NodeInfo(
            name="n1",
            labels={"rack": "r1"},
            allocatable={GPU: 8, RDMA: 4},
            requested={GPU: 2, RDMA: 1},
            topology=TOPOLOGY,
            pods=frozenset({("team-a", "w0")}),
        ),
        NodeInfo(
            name="n2",
            labels={},
            allocatable={GPU: 4},
            requested={},
            topology=None,
            topology_error=NO_TOPOLOGY,
        ),
    ]
    assert sorted(map(str, (p["metadata"]["name"] for p in source.cluster.pods()))) == [
        "w0",
        "w1",
    ]
    w1 = source.cluster.pod("default", "w1")
    assert w1 is not None
    assert w1["spec"].get("nodeName") is None


@pytest.mark.parametrize(
    "wrap",
    [
        lambda items: items,
        lambda items: {"apiVersion": "v1", "kind": "List", "items": items},
        lambda items: {"apiVersion": "v1", "kind": "PodList", "items": items},
    ],
    ids=["bare list", "kind: List", "kind: PodList"],
)
async def test_reads_a_json_list(tmp_path: Path, wrap: Any) -> None:
    items = [node("n1", 8), pod("w0", 2, on="n1"), pod("w1", 4, on="n1", phase="Succeeded")]
    path = write(tmp_path, "cluster.json", orjson.dumps(wrap(items)).decode())
    source = SnapshotSource.from_file(path)
    assert source.cluster.node("n1") == NodeInfo(
        name="n1",
        labels={},
        allocatable={GPU: 8},
        requested={GPU: 2},
        topology=None,
        topology_error=NO_TOPOLOGY,
        pods=frozenset({("team-a", "w0")}),
    )
    assert len(list(source.cluster.pods())) == 2


BAD_FILES = [
    (
        "a.yaml",
        "nodes: [\n",
        "not valid YAML: expected the node content, but found '<stream end>' (line 2, column 1)",
    ),
    (
        "a.yaml",
        "a: b: c\n",
        "not valid YAML: mapping values are not allowed here (line 1, column 5)",
    ),
    (
        "a.json",
        '{"kind": "Node",}',
        "not valid JSON: trailing comma is not allowed: line 1 column 16 (char 15)",
    ),
    ("a.yaml", b"kind: Node\xff\n", "not UTF-8 text (byte 10)"),
    ("a.yaml", "just text\n", "document 1 is 'just text', not an object or a list"),
    ("a.yaml", "kind: List\nitems: {a: 1}\n", "document 1: List.items is not a list"),
    ("a.yaml", "- kind: Node\n  metadata: {name: n1}\n- 3\n", "object 2 is 3, not an object"),
    ("a.yaml", "metadata: {name: n1}\n", "object 1 has no kind"),
    ("a.yaml", "kind: Node\nmetadata: {labels: {}}\n", "object 1 (Node) has no metadata.name"),
    ("a.yaml", "kind: Pod\n", "object 1 (Pod) has no metadata.name"),
    ("a.yaml", "kind: Node\nmetadata: {name: [n1]}\n", "object 1 (Node) has no metadata.name"),
    ("a.yaml", "kind: Node\nmetadata: n1\n", "object 1 (Node): metadata is not a map"),
    (
        "a.yaml",
        "kind: Node\nmetadata: {name: n1, labels: [a]}\n",
        "object 1 (Node): metadata.labels is not a map",
    ),
    ("a.yaml", "kind: Pod\nmetadata: {name: w0}\nspec: []\n", "object 1 (Pod): spec is not a map"),
    (
        "a.yaml",
        "kind: List\nitems:\n- {kind: Node, metadata: {name: n1}}\n---\nkind: Node\n"
        "metadata: {name: n1}\n",
        "object 2: Node n1 appears twice",
    ),
    (
        "a.yaml",
        "- {kind: Pod, metadata: {name: w0}}\n"
        "- {kind: Pod, metadata: {name: w0, namespace: default}}\n",
        "object 2: Pod default/w0 appears twice",
    ),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_FILES, ids=[m for *_, m in BAD_FILES])
def test_rejects_a_file_it_cannot_use(
    tmp_path: Path, name: str, content: str | bytes, message: str
) -> None:
    path = write(tmp_path, name, content)
    with pytest.raises(SnapshotError) as error:
        SnapshotSource.from_file(path)
    assert str(error.value) == f"{path}: {message}"


def test_rejects_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.yaml"
    with pytest.raises(SnapshotError) as error:
        SnapshotSource.from_file(path)
    assert str(error.value) == f"{path}: cannot read it: No such file or directory"


def test_skips_empty_documents_and_other_kinds(tmp_path: Path) -> None:
    content = "---\n---\nkind: Namespace\nmetadata: {name: team-a}\n---\nkind: ConfigMap\n"
    source = SnapshotSource.from_file(write(tmp_path, "a.yaml", content))
    assert (list(source.cluster.nodes()), list(source.cluster.pods())) == ([], [])


@pytest.mark.parametrize("uid", [UID, ""], ids=["uid", "no uid"])
async def test_bind_updates_the_model(uid: str) -> None:
    source = SnapshotSource([node("n1", 8), pod("w0", 2)])
    await source.bind("team-a", "w0", uid, "n1", {keys.GID_INDEX: "3"})
    info = source.cluster.node("n1")
    assert info is not None
    assert (info.requested, info.pods) == ({GPU: 2}, frozenset({("team-a", "w0")}))
    bound = pod("w0", 2, on="n1")
    bound["metadata"]["annotations"] = {"a": "1", keys.GID_INDEX: "3"}
    assert source.cluster.pod("team-a", "w0") == bound


async def test_bind_without_annotations_keeps_the_pods_own() -> None:
    source = SnapshotSource([node("n1", 8), pod("w0", 2)])
    await source.bind("team-a", "w0", UID, "n1", {})
    assert source.cluster.pod("team-a", "w0") == pod("w0", 2, on="n1")


@pytest.mark.parametrize(
    ("namespace", "name", "uid", "target", "message"),
    [
        ("team-b", "w0", UID, "n1", "pod team-b/w0 not found"),
        ("team-a", "w9", UID, "n1", "pod team-a/w9 not found"),
        ("team-a", "w0", "other", "n1", f"pod team-a/w0 has uid {UID}, not other"),
        ("team-a", "w1", UID, "n1", "pod team-a/w1 is already bound to node n2"),
        ("team-a", "w0", UID, "n9", "node n9 not found"),
    ],
)
async def test_bind_errors(namespace: str, name: str, uid: str, target: str, message: str) -> None:
    source = SnapshotSource([node("n1", 8), node("n2", 8), pod("w0", 2), pod("w1", 1, on="n2")])
    generation = source.cluster.generation
    with pytest.raises(BindError) as error:
        await source.bind(namespace, name, uid, target, {keys.GID_INDEX: "3"})
    assert str(error.value) == message
    assert source.cluster.generation == generation


def test_a_snapshot_holds_the_owners_of_its_pods(tmp_path: Path) -> None:
    from extender.cluster.owners import BATCH_JOBS, JOBSETS, PYTORCH_JOBS, VOLCANO_JOBS

    jobs = [
        {"apiVersion": version, "kind": kind, "metadata": {"name": name, "namespace": "a"}}
        for version, kind, name in [
            ("kubeflow.org/v1", "PyTorchJob", "llama"),
            ("batch/v1", "Job", "x"),
            # The same name in another group is another object.
            ("batch.volcano.sh/v1alpha1", "Job", "x"),
        ]
    ]
    path = tmp_path / "c.json"
    path.write_bytes(orjson.dumps({"kind": "List", "items": [node("n1", 8), *jobs]}))
    owners = SnapshotSource.from_file(path).owners
    assert owners.find(PYTORCH_JOBS, "a", "llama") == jobs[0]
    assert owners.find(BATCH_JOBS, "a", "x") == jobs[1]
    assert owners.find(VOLCANO_JOBS, "a", "x") == jobs[2]
    # A snapshot holds every owner there is: one it lacks does not exist.
    assert owners.listed(JOBSETS)
    assert owners.find(JOBSETS, "a", "llama") is None
