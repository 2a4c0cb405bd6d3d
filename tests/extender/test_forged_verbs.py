"""Verbs for pods the apiserver does not have, or not for this scheduler, change nothing: the
real `kube-rdma extender` process over HTTP, against the fake apiserver, which counts the
evictions and bindings it receives.

A full cluster: 8 nodes, each running one 8-GPU pod of priority 1,000,000. A forged pod of
priority 2,000,000,000 in a gang of 8 is posted to /filter and /preempt: before, its gang was
noted as waiting and evicted all 8 pods. Binds of a pod of another scheduler and of a pod that
does not exist bind nothing; a bind of a real pod of the extender's scheduler does bind (the
count works)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.fakeapi import FakeApiServer, eventually
from testbed.net import wait_healthy
from testbed.processes import Child

SIZE = 8
NAMES = [f"gpu-{i}" for i in range(SIZE)]


def victim(index: int) -> Json:
    pod = nodes.pod(f"running-{index}", node_name=f"gpu-{index}", phase="Running")
    pod["spec"]["priority"] = 1_000_000
    pod["spec"]["schedulerName"] = "rdma-scheduler"
    return pod


def forged() -> Json:
    annotations = {keys.GANG: "forged", keys.GANG_SIZE: str(SIZE)}
    pod = nodes.pod("forged-0", annotations=annotations)
    pod["metadata"]["uid"] = "uid-that-no-pod-has"
    pod["spec"]["priority"] = 2_000_000_000
    pod["spec"]["schedulerName"] = "rdma-scheduler"
    return pod


@dataclass
class Extender:
    session: aiohttp.ClientSession
    base: str

    async def post(self, verb: str, body: Json) -> Any:
        async with self.session.post(f"{self.base}/{verb}", data=orjson.dumps(body)) as response:
            assert response.status == 200, await response.text()
            return orjson.loads(await response.read())

    async def bind(self, name: str, uid: str, node: str = "gpu-0") -> str:
        args = {"PodName": name, "PodNamespace": "team-a", "PodUID": uid, "Node": node}
        return str((await self.post("bind", args))["Error"])


@pytest.fixture
async def extender(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Extender]:
    for index in range(SIZE):
        fake_api.create("nodes", nodes.node(f"gpu-{index}", nodes.hgx()))
        fake_api.create("pods", victim(index))
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    argv = [sys.executable, "-m", "kube_rdma_cli", "extender", "--kubeconfig", str(kubeconfig)]
    argv += ["--host", "127.0.0.1", "--port", "0", "--hold-after", "0"]
    with Child(argv) as child:
        said = await asyncio.to_thread(
            child.stderr.wait_for, r"extender listening on (http://127\.0\.0\.1:\d+)"
        )
        metrics = await asyncio.to_thread(
            child.stderr.wait_for, r"extender metrics listening on (http://127\.0\.0\.1:\d+)"
        )
        assert await asyncio.to_thread(wait_healthy, metrics.group(1)), child.stderr.text
        async with aiohttp.ClientSession() as session:
            await eventually(lambda: ready(session, metrics.group(1)))
            yield Extender(session, said.group(1))
        child.process.terminate()
        assert await asyncio.to_thread(child.wait) == 0, child.stderr.text


async def ready(session: aiohttp.ClientSession, metrics: str) -> bool:
    async with session.get(f"{metrics}/readyz") as response:
        return response.status == 200


def evictions(api: FakeApiServer) -> int:
    return sum(1 for r in api.requests if r.method == "POST" and r.path.endswith("/eviction"))


def bindings(api: FakeApiServer) -> int:
    return sum(
        1
        for r in api.requests
        if r.method == "POST" and (r.path.endswith("/binding") or r.path.endswith("/bindings"))
    )


async def test_a_forged_gang_evicts_nothing(extender: Extender, fake_api: FakeApiServer) -> None:
    pod = forged()
    for _ in range(3):
        answer = await extender.post("filter", {"Pod": pod, "NodeNames": NAMES})
        assert answer["NodeNames"] == []
        assert "is not in the extender's cache yet" in answer["Error"]
        victims = {
            node: {"Pods": [{"UID": f"uid-running-{i}"}], "NumPDBViolations": 0}
            for i, node in enumerate(NAMES)
        }
        args = {"Pod": pod, "NodeNameToMetaVictims": victims}
        assert await extender.post("preempt", args) == {"NodeNameToMetaVictims": {}}
    # Gang preemption is decided by the upkeep that runs every second: give it two rounds.
    await asyncio.sleep(2.5)  # the absence of an eviction can only be waited out
    assert evictions(fake_api) == 0
    for index in range(SIZE):
        stored = fake_api.get("pods", f"running-{index}", "team-a")
        assert "deletionTimestamp" not in stored["metadata"]


async def test_binds_of_other_schedulers_pods_and_of_unknown_pods_bind_nothing(
    extender: Extender, fake_api: FakeApiServer
) -> None:
    other = nodes.pod("other", gpus=0, rdma={})
    other["spec"]["schedulerName"] = "default-scheduler"
    created = fake_api.create("pods", other)
    uid = created["metadata"]["uid"]
    refused = (
        "pod team-a/other is for scheduler default-scheduler, not rdma-scheduler: the "
        "extender binds only the pods of the scheduler it serves"
    )

    async def refused_by_name() -> bool:
        return await extender.bind("other", uid) == refused

    await eventually(refused_by_name)  # once its watch delivered the pod
    assert await extender.bind("ghost", "uid-ghost") == "pod team-a/ghost does not exist"
    assert await extender.bind("forged-0", "uid-that-no-pod-has") == (
        "pod team-a/forged-0 does not exist"
    )
    assert bindings(fake_api) == 0
    assert "nodeName" not in fake_api.get("pods", "other", "team-a")["spec"]
    # The count works: a pod of the extender's scheduler is bound.
    own = nodes.pod("own", gpus=0, rdma={})
    own["spec"]["schedulerName"] = "rdma-scheduler"
    own_uid = fake_api.create("pods", own)["metadata"]["uid"]

    async def bound() -> bool:
        return await extender.bind("own", own_uid) == ""

    await eventually(bound)
    assert bindings(fake_api) == 1
