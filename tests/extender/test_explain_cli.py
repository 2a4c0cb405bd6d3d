"""`kube-rdma explain` as kubectl would run it: the kubeconfig from $KUBECONFIG, `-n NAMESPACE
POD`, and the extender reached through the apiserver, with a port-forward to the pod that holds
the scheduler's Lease (the fake apiserver relays it to a real extender process); and every way
that fails, said in one line with what to do."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from kube_rdma_cli.dispatch import main
from testbed.builders import nodes
from testbed.builders.gangs import BOUND_AT, bound_member
from testbed.fakeapi import FakeApiServer, kubeconfig
from testbed.net import wait_healthy
from testbed.processes import Child

LEADER = "rdma-scheduler-7d9f-abcde"


@pytest.fixture(scope="module")
def extender_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A real extender on the loopback, as in the scheduler pod, on a port it picked."""
    objects = [nodes.node(f"gpu-{i}", nodes.hgx(), labels={keys.LEAF: "leaf-a"}) for i in (1, 2)]
    objects += [bound_member(0, "gpu-1"), bound_member(1, "gpu-2")]
    snapshot = tmp_path_factory.mktemp("cluster") / "cluster.json"
    snapshot.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    argv: list[str | Path] = [
        sys.executable,
        "-m",
        "kube_rdma_cli",
        "extender",
        "--cluster-snapshot",
        snapshot,
    ]
    with Child([*argv, "--host", "127.0.0.1", "--port", "0"]) as child:
        said = child.stderr.wait_for(r"extender listening on (http://127\.0\.0\.1:(\d+))")
        assert wait_healthy(said.group(1)), child.stderr.text
        yield int(said.group(2))
        child.process.terminate()
        assert child.wait() == 0, child.stderr.text


@pytest.fixture
def cluster(fake_api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$KUBECONFIG names a kubeconfig for the fake apiserver; the scheduler's Lease is held by
    LEADER, whose pod exists."""
    path = fake_api.write_kubeconfig(tmp_path / "config")
    monkeypatch.setenv("KUBECONFIG", str(path))
    monkeypatch.setenv("HOME", str(tmp_path))
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "rdma-scheduler", "namespace": "kube-rdma"},
        "spec": {"holderIdentity": f"{LEADER}_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"},
    }
    fake_api.create("leases", lease, "kube-rdma")
    fake_api.create("pods", nodes.pod(LEADER, namespace="kube-rdma"), "kube-rdma")
    return path


def rewrite(path: Path, document: Json) -> None:
    path.write_bytes(orjson.dumps(document))


async def explain(*argv: str) -> int:
    # The command runs its own event loop: in a thread of its own, beside the test's.
    return await asyncio.to_thread(main, ["explain", *argv])


async def test_explain_reaches_the_extender_through_the_apiserver(
    fake_api: FakeApiServer, cluster: Path, extender_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.port_forwards.add("kube-rdma", LEADER, 8888, extender_port)
    assert await explain("-n", "ml-training", "finetune-0") == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"kube-rdma explain: asking the extender through port-forward to kube-rdma/{LEADER}:8888 "
        f"(Lease kube-rdma/rdma-scheduler; kubeconfig {cluster} (from KUBECONFIG), context "
        "fake-apiserver)"
    ]
    assert out.splitlines()[:3] == [
        f"bound to gpu-1 by rdma-scheduler at {BOUND_AT}",
        "pod ml-training/finetune-0: 8 GPUs, RDMA rdma/hca: 1, 8 rails, Ethernet",
        "gang ml-training/finetune of 2 (kube-rdma.io/gang): bound whole: 2 of 2 members bound",
    ]
    assert await explain("ml-training/finetune-1", "--json") == 0
    body = json.loads(capsys.readouterr().out)
    assert body["bound"] == {"node": "gpu-2", "scheduler": "rdma-scheduler", "at": BOUND_AT}
    assert await explain("-n", "ml-training", "ghost") == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "kube-rdma explain: pod ml-training/ghost does not exist (asked the extender through "
        f"port-forward to kube-rdma/{LEADER}:8888); check the name: kubectl get pod -n "
        "ml-training ghost"
    )


async def test_pod_alone_takes_the_contexts_namespace(
    fake_api: FakeApiServer, cluster: Path, extender_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.port_forwards.add("kube-rdma", LEADER, 8888, extender_port)
    document = kubeconfig(fake_api.host)
    document["contexts"][0]["context"]["namespace"] = "ml-training"
    rewrite(cluster, document)
    assert await explain("finetune-0", "--json") == 0
    assert json.loads(capsys.readouterr().out)["pod"] == "ml-training/finetune-0"


async def test_inside_the_leading_pod_the_loopback_is_asked(
    cluster: Path,
    extender_port: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`kubectl exec` into the leader: no port-forward (nothing stands for its port here)."""
    monkeypatch.setattr(socket, "gethostname", lambda: LEADER)
    port = str(extender_port)
    assert await explain("ml-training/finetune-0", "--extender-port", port, "--json") == 0
    assert capsys.readouterr().err.splitlines() == [
        f"kube-rdma explain: asking the extender of this pod at http://127.0.0.1:{port} (Lease "
        f"kube-rdma/rdma-scheduler; kubeconfig {cluster} (from KUBECONFIG), context "
        "fake-apiserver)"
    ]


async def test_an_extender_that_does_not_answer_in_the_pod(
    cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await explain("-n", "ml-training", "finetune-0") == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"kube-rdma explain: cannot reach the extender through port-forward to kube-rdma/{LEADER}"
        f":8888: error forwarding port 8888 to pod kube-rdma/{LEADER}: failed to connect to "
        "localhost:8888 inside the pod: connection refused; check the extender: kubectl logs -n "
        f"kube-rdma {LEADER} -c extender; or give --extender URL after `kubectl port-forward -n "
        f"kube-rdma pod/{LEADER} 8888`"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            "no lease",
            "no Lease kube-rdma/rdma-scheduler: is the rdma-scheduler deployed "
            "(manifests/scheduler), with that leader-election lease? Give --lease NAMESPACE/NAME, "
            "or give --extender URL",
        ),
        (
            "held by nobody",
            "Lease kube-rdma/rdma-scheduler is held by nobody: no rdma-scheduler replica leads "
            "now; see kubectl get pods -n kube-rdma, or give --extender URL",
        ),
        (
            "leader gone",
            f"Lease kube-rdma/rdma-scheduler is held by {LEADER}_0f1e2d3c-4b5a-6978-8796-"
            f"a5b4c3d2e1f0, but pod kube-rdma/{LEADER} does not exist (a leader that just went: "
            "retry once another replica took the lease), or give --extender URL",
        ),
    ],
)
async def test_no_leader_to_forward_to(
    fake_api: FakeApiServer,
    cluster: Path,
    capsys: pytest.CaptureFixture[str],
    change: str,
    message: str,
) -> None:
    if change == "no lease":
        fake_api.delete("leases", "rdma-scheduler", "kube-rdma")
    elif change == "held by nobody":
        fake_api.patch(
            "leases", "rdma-scheduler", {"spec": {"holderIdentity": None}}, namespace="kube-rdma"
        )
    else:
        fake_api.delete("pods", LEADER, "kube-rdma")
    assert await explain("ml-training/finetune-0") == 1
    assert capsys.readouterr().err.splitlines() == [f"kube-rdma explain: {message}"]


async def test_bad_kubeconfig_input_is_one_line_and_status_2(
    fake_api: FakeApiServer, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await explain("ml-training/finetune-0", "--context", "prod") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"kube-rdma explain: {cluster} has no context 'prod' (--context); known: fake-apiserver"
    ]
    assert await explain("a/b/c") == 2
    assert await explain("ml-training/finetune-0", "--lease", "rdma-scheduler") == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "kube-rdma explain: --lease 'rdma-scheduler': give it as NAMESPACE/NAME"
    )
    document = kubeconfig(fake_api.host)
    del document["current-context"]
    rewrite(cluster, document)
    assert await explain("ml-training/finetune-0") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"kube-rdma explain: {cluster} sets no current-context: give --context NAME (known: "
        "fake-apiserver), or run kubectl config use-context NAME"
    ]
