"""`python -m testbed.fakeapi` as a process of its own, serving a generated cluster, with the real
product driven against it from outside: `kube-rdma extender`, `agent run` and `webhook`, each
given nothing but the kubeconfig the fake apiserver wrote."""

from __future__ import annotations

import re
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from agent.sysfs import scan
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma.core.topology import encode
from testbed.builders import sysfs_tree
from testbed.clustergen import ClusterSpec, generate, write_snapshot
from testbed.fakeapi import kubeconfig
from testbed.net import listening
from testbed.processes import Child
from testbed.wait import eventually

REPO = Path(__file__).resolve().parents[2]
# Eight nodes, one of them without the agent's annotation; the pods are those of 8 x 8 x 0.5 GPUs.
SPEC = ClusterSpec(nodes=8, seed=11, no_agent_fraction=0.125)
CLUSTER = generate(SPEC)
NO_DRA = ", 0 resourceclaims, 0 resourceclaimtemplates, 0 resourceslices"
"""The DRA resources the fake serves, empty."""
NODES = [o for o in CLUSTER if o["kind"] == "Node"]
PODS = [o for o in CLUSTER if o["kind"] == "Pod"]
NAMESPACES = sorted(
    {p["metadata"]["namespace"] for p in PODS}
    | {"default", "kube-node-lease", "kube-public", "kube-system"}
)


@dataclass(frozen=True)
class FakeApiProcess:
    process: subprocess.Popen[str]
    url: str
    kubeconfig: Path
    line: str


def start_fake_api(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "testbed.fakeapi", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def product(*args: str) -> Child:
    """`kube-rdma ARGS` as its own process."""
    return Child([sys.executable, "-m", "kube_rdma_cli", *args], cwd=REPO)


def listening_port(child: Child) -> int:
    """The port a server started with --port 0 says it got."""
    return int(child.stderr.wait_for(r"listening on https?://127\.0\.0\.1:(\d+)")[1])


def stop(process: subprocess.Popen[Any] | Child) -> int:
    if isinstance(process, Child):
        process.process.send_signal(signal.SIGTERM)
        return process.wait(10)
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=10)


@pytest.fixture(scope="module")
def fake_api_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeApiProcess]:
    """The fake apiserver serving CLUSTER from a snapshot file, for the whole module."""
    folder = tmp_path_factory.mktemp("fakeapi")
    write_snapshot(CLUSTER, folder / "cluster.json")
    process = start_fake_api(
        "--port", "0", "--load", str(folder / "cluster.json"),
        "--kubeconfig-out", str(folder / "kubeconfig"),
    )  # fmt: skip
    try:
        line = process.stdout.readline() if process.stdout else ""
        said = re.match(r"fake apiserver listening on (http://127\.0\.0\.1:\d+): ", line)
        assert said, line + (process.stderr.read() if process.stderr else "")
        yield FakeApiProcess(process, said[1], folder / "kubeconfig", line)
    finally:
        assert stop(process) == 0


async def get_json(url: str, context: ssl.SSLContext | None = None) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, ssl=context or True) as response,
    ):
        body = await response.read()
        return response.status, orjson.loads(body) if body[:1] in (b"{", b"[") else body


async def ready(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        return (await get_json(f"{url}/readyz", context))[0] == 200
    except aiohttp.ClientError:
        return False


def test_it_says_where_it_listens_and_writes_a_kubeconfig(fake_api_process: FakeApiProcess) -> None:
    assert fake_api_process.line == (
        f"fake apiserver listening on {fake_api_process.url}: "
        f"0 configmaps, 0 deviceclasses, 0 events, 0 leases, {len(NAMESPACES)} namespaces, "
        f"8 nodes, 0 poddisruptionbudgets, {len(PODS)} pods{NO_DRA}\n"
    )
    written = orjson.loads(fake_api_process.kubeconfig.read_bytes())
    assert written == kubeconfig(fake_api_process.url)


async def test_it_serves_the_snapshot_over_rest(fake_api_process: FakeApiProcess) -> None:
    def identities(objects: list[Json]) -> list[tuple[str | None, str, str]]:
        return sorted(
            (o["metadata"].get("namespace"), o["metadata"]["name"], o["metadata"]["uid"])
            for o in objects
        )

    status, pods = await get_json(f"{fake_api_process.url}/api/v1/pods")
    assert status == 200
    assert identities(pods["items"]) == identities(PODS)
    _, nodes = await get_json(f"{fake_api_process.url}/api/v1/nodes")
    assert identities(nodes["items"]) == identities(NODES)
    _, namespaces = await get_json(f"{fake_api_process.url}/api/v1/namespaces")
    assert [n["metadata"]["name"] for n in namespaces["items"]] == NAMESPACES
    assert namespaces["items"][0]["metadata"]["labels"] == {
        "kubernetes.io/metadata.name": "default"
    }


async def test_the_extender_explains_a_pod_over_the_snapshots_nodes(
    fake_api_process: FakeApiProcess,
) -> None:
    pending = next(p for p in PODS if p["status"]["phase"] == "Pending")
    with product(
        "extender", "--kubeconfig", str(fake_api_process.kubeconfig),
        "--host", "127.0.0.1", "--port", "0",
    ) as extender:  # fmt: skip
        url = f"http://127.0.0.1:{listening_port(extender)}"
        await eventually(lambda: ready(url), within=20.0)
        meta = pending["metadata"]
        query = f"namespace={meta['namespace']}&name={meta['name']}"
        status, body = await get_json(f"{url}/explain?{query}")
        assert stop(extender) == 0, extender.stderr.text
    assert status == 200
    assert body["pod"] == f"{meta['namespace']}/{meta['name']}"
    assert sorted(n["node"] for n in body["nodes"]) == [n["metadata"]["name"] for n in NODES]
    assert sum(body["summary"].values()) == len(NODES)


async def test_the_agent_annotates_its_node(
    fake_api_process: FakeApiProcess, tmp_path: Path
) -> None:
    [bare] = [n for n in NODES if keys.TOPOLOGY not in n["metadata"]["annotations"]]
    name = bare["metadata"]["name"]
    sysfs_tree.hgx_8gpu_8nic(tmp_path)

    async def annotation() -> str | None:
        _, node = await get_json(f"{fake_api_process.url}/api/v1/nodes/{name}")
        published: str | None = node["metadata"]["annotations"].get(keys.TOPOLOGY)
        return published

    with product(
        "agent", "run", "--kubeconfig", str(fake_api_process.kubeconfig),
        "--node-name", name, "--sysfs-root", str(tmp_path),
    ) as agent:  # fmt: skip
        await eventually(annotation, within=20.0)
        assert stop(agent) == 0, agent.stderr.text
    assert await annotation() == encode(scan(tmp_path))


async def test_the_webhook_watches_namespaces_and_becomes_ready(
    fake_api_process: FakeApiProcess, cert_dir: Path
) -> None:
    with product(
        "webhook", "--kubeconfig", str(fake_api_process.kubeconfig),
        "--tls-cert-file", str(cert_dir / "tls.crt"), "--tls-key-file", str(cert_dir / "tls.key"),
        "--host", "127.0.0.1", "--port", "0",
    ) as webhook:  # fmt: skip
        port = listening_port(webhook)
        context = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
        await eventually(lambda: ready(f"https://localhost:{port}", context), within=20.0)
        assert stop(webhook) == 0, webhook.stderr.text


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_without_a_snapshot_it_serves_a_new_cluster_and_stops_on_a_signal(
    sig: signal.Signals,
) -> None:
    process = start_fake_api("--port", "0")
    line = process.stdout.readline() if process.stdout else ""
    prefix, _, contents = line.rpartition(": ")
    assert prefix.startswith("fake apiserver listening on http://127.0.0.1:")
    assert (
        contents == "0 configmaps, 0 deviceclasses, 0 events, 0 leases, 4 namespaces, 0 nodes, "
        f"0 poddisruptionbudgets, 0 pods{NO_DRA}\n"
    )
    assert listening(int(prefix.rpartition(":")[2]))
    process.send_signal(sig)
    assert process.wait(timeout=10) == 0
    assert process.stderr is not None
    assert process.stderr.read() == ""


DUPLICATE = "- {kind: Node, metadata: {name: n}}\n- {kind: Node, metadata: {name: n}}\n"


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("cluster.yaml", "- {kind: Node}\n", "object 1 (Node) has no metadata.name"),
        ("cluster.yaml", "42\n", "document 1 is 42, not an object or a list"),
        ("cluster.yaml", "kind: List\nitems: 3\n", "document 1: List.items is not a list"),
        ("cluster.yaml", DUPLICATE, 'nodes "n" already exists'),
        ("cluster.yaml", "a: [b\n", "not valid YAML: expected ',' or ']', but got '<stream end>'"
         " (line 2, column 1)"),
        ("cluster.json", "[1]", "object 1 is 1, not an object"),
        ("missing.json", None, "cannot read it: No such file or directory"),
    ],
)  # fmt: skip
def test_a_bad_snapshot_is_refused_with_exit_2(
    tmp_path: Path, name: str, text: str | None, problem: str
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    args = [sys.executable, "-m", "testbed.fakeapi", "--load", str(path), "--port", "0"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=10, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"python -m testbed.fakeapi: {path}: {problem}\n"


def test_kinds_it_does_not_serve_are_left_out_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "kind: Service\nmetadata: {name: s}\n---\nkind: Node\nmetadata: {name: n}\n"
        "---\n[{kind: Service, metadata: {name: t}}, {kind: Secret, metadata: {name: u}}]\n"
    )
    process = start_fake_api("--port", "0", "--load", str(path))
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.endswith(
            ": 0 configmaps, 0 deviceclasses, 0 events, 0 leases, 4 namespaces, 1 nodes, "
            f"0 poddisruptionbudgets, 0 pods{NO_DRA}\n"
        )
    finally:
        assert stop(process) == 0
    assert process.stderr is not None
    assert process.stderr.read() == (
        "python -m testbed.fakeapi: not served, so left out: 1 Secret, 2 Service\n"
    )


def test_a_taken_port_exits_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [sys.executable, "-m", "testbed.fakeapi", "--port", str(port)]
        done = subprocess.run(
            args, cwd=REPO, capture_output=True, text=True, timeout=10, check=False
        )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "python -m testbed.fakeapi: cannot listen: error while attempting to bind on address "
        f"('127.0.0.1', {port}): address already in use\n"
    )


async def test_workloads_in_a_snapshot_are_served_as_with_their_crds(tmp_path: Path) -> None:
    job: Json = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}
    job |= {"metadata": {"name": "llama", "namespace": "team-a", "uid": "u-1"}}
    path = tmp_path / "cluster.json"
    path.write_bytes(orjson.dumps([job]))
    process = start_fake_api("--port", "0", "--load", str(path))
    try:
        line = process.stdout.readline() if process.stdout else ""
        port = int(line.split(": ")[0].rpartition(":")[2])
        assert line.endswith(
            ": 0 configmaps, 0 deviceclasses, 0 events, 0 leases, 5 namespaces, 0 nodes, "
            "0 poddisruptionbudgets, 0 pods, 1 pytorchjobs.kubeflow.org, 0 resourceclaims, "
            "0 resourceclaimtemplates, 0 resourceslices\n"
        )
        url = f"http://127.0.0.1:{port}/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs"
        status, body = await get_json(url)
        assert (status, [item["metadata"]["uid"] for item in body["items"]]) == (200, ["u-1"])
        # The CRDs of objects it does not hold are not installed.
        status, _ = await get_json(f"http://127.0.0.1:{port}/apis/jobset.x-k8s.io/v1alpha2/jobsets")
        assert status == 404
    finally:
        assert stop(process) == 0
