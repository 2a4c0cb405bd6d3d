"""`kube-rdma acceptance run` against the fake apiserver: the test plays the kubelet (launcher
phases, launcher logs served on pods/NAME/log) for four nodes on two leaves, one of them bad."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from fabric.plan import Mode
from fabric.render import Options, SshKey
from fabric.report import table
from fabric.run import AcceptanceRun, Settings
from kube_rdma.core import keys
from testbed.builders.nodes import hgx, node
from testbed.fakeapi import RESOURCES, FakeApiServer, Resource

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nccl-tests"
GOOD = (FIXTURES / "h100-ib-2node.txt").read_text()
BAD = (FIXTURES / "v100-socket-old.txt").read_text()
LEAVES = {"n1": "leaf-a", "n2": "leaf-a", "n3": "leaf-b", "n4": "leaf-b"}
NS = "acceptance"
KEY = SshKey("PRIVATE", "ssh-ed25519 AAAA test\n")


@pytest.fixture
async def fake() -> AsyncIterator[FakeApiServer]:
    resources = {
        **RESOURCES,
        "services": Resource("Service", namespaced=True),
        "secrets": Resource("Secret", namespaced=True),
    }
    async with FakeApiServer(resources) as server:
        for name, leaf in LEAVES.items():
            server.create("nodes", node(name, hgx("InfiniBand"), labels={keys.LEAF: leaf}))
        yield server


async def kubelet(fake: FakeApiServer, bad: str) -> None:
    """Finish every launcher: the tests with the bad node print a socket run."""
    while True:
        for pod in fake.objects("pods", NS):
            meta, phase = pod["metadata"], (pod.get("status") or {}).get("phase")
            if meta["labels"].get(keys.ACCEPTANCE_ROLE) != "launcher" or phase:
                continue
            group = meta["labels"][keys.ACCEPTANCE_GROUP]
            workers = [
                p["spec"]["affinity"]["nodeAffinity"][
                    "requiredDuringSchedulingIgnoredDuringExecution"
                ]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0]
                for p in fake.objects("pods", NS)
                if p["metadata"]["labels"].get(keys.ACCEPTANCE_GROUP) == group
                and p["metadata"]["labels"].get(keys.ACCEPTANCE_ROLE) == "worker"
            ]
            fake.logs.set(NS, meta["name"], BAD if bad in workers else GOOD)
            fake.patch("pods", meta["name"], {"status": {"phase": "Succeeded"}}, namespace=NS)
        await asyncio.sleep(0.01)


async def run(fake: FakeApiServer, label: bool) -> tuple[Any, list[Any], str]:
    options = Options(run="acc", namespace=NS, profile="rails8", gpus_per_node=8)
    settings = Settings(options, tuple(LEAVES), Mode.PAIRS, label=label, poll=0.01)
    out = io.StringIO()
    player = asyncio.create_task(kubelet(fake, bad="n4"))
    try:
        async with fake.api_client() as api:
            clock = lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)  # noqa: E731
            runner = AcceptanceRun(client.CoreV1Api(api), settings, KEY, out, clock)
            outcomes = await runner.run()
    finally:
        player.cancel()
    return runner, outcomes, out.getvalue()


async def test_pairs_are_run_judged_labelled_and_cleaned_up(fake: FakeApiServer) -> None:
    runner, outcomes, progress = await run(fake, label=True)
    assert [(o.group.name, o.group.nodes, o.passed) for o in outcomes] == [
        ("r0-0", ("n1", "n2"), True),
        ("r0-1", ("n3", "n4"), False),
        ("r1-0", ("n1", "n3"), True),
        ("r1-1", ("n2", "n4"), False),
    ]
    assert outcomes[0].answer is not None
    assert (outcomes[0].answer["expected_busbw"], outcomes[0].answer["max_busbw"]) == (
        360.0,
        374.57,
    )
    assert progress.splitlines()[-1] == "round 1: r1-0 Succeeded, r1-1 Succeeded"
    lines = table(outcomes, runner.leaves).splitlines()
    assert lines[0].split() == [
        "TEST",
        "NODES",
        "LEAVES",
        "BUSBW",
        "EXPECTED",
        "VERDICT",
        "REASONS",
    ]
    assert lines[1].split()[:6] == ["r0-0", "n1,n2", "leaf-a", "374.57", "360", "pass"]
    assert lines[-4:] == [
        "n1: passed",
        "n2: failed (r1-1)",
        "n3: failed (r0-1)",
        "n4: failed (r0-1, r1-1)",
    ]
    for plural in ("pods", "services", "secrets"):
        assert fake.objects(plural, NS) == []
    labels = {
        n["metadata"]["name"]: n["metadata"]["labels"][keys.ACCEPTANCE]
        for n in fake.objects("nodes")
    }
    assert labels == {"n1": "passed", "n2": "failed", "n3": "failed", "n4": "failed"}
    stamp = fake.get("nodes", "n1")["metadata"]["annotations"][keys.ACCEPTANCE_TIME]
    assert stamp == "2026-01-02T03:04:05Z"


async def test_nodes_are_left_unlabelled_without_label(fake: FakeApiServer) -> None:
    await run(fake, label=False)
    assert all(keys.ACCEPTANCE not in n["metadata"]["labels"] for n in fake.objects("nodes"))


async def test_pod_logs_are_served_per_pod_and_container(fake: FakeApiServer) -> None:
    fake.create("pods", {"metadata": {"name": "p"}, "spec": {"containers": []}}, "ns")
    fake.logs.set("ns", "p", "main\n")
    fake.logs.set("ns", "p", "init\n", container="init")
    async with fake.api_client() as api:
        core = client.CoreV1Api(api)
        assert await core.read_namespaced_pod_log("p", "ns") == "main\n"
        assert await core.read_namespaced_pod_log("p", "ns", container="init") == "init\n"
        with pytest.raises(client.ApiException) as missing:
            await core.read_namespaced_pod_log("q", "ns")
    assert missing.value.status == 404
