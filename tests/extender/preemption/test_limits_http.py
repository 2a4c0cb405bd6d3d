"""The security review's scenarios against the real `kube-rdma extender` process, over HTTP, on
the fake apiserver (which counts evictions: testbed/fakeapi/evictions.py), with the plans
expiring after a second and the sweep running every second between rounds:

- one pending pod declaring a gang of 8 whose other members do not exist evicts nothing
  (kube-scheduler would evict at most one node's pods for one pod), round after round, whether
  it reaches the filter, the preempt verb or only the sweep;
- such a gang plans nothing on free nodes: another namespace's pod still has them all;
- a gang whose members say `preemptionPolicy: Never` neither evicts nor holds nodes.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.fakeapi import FakeApiServer
from testbed.processes import Child

NAMES = [f"n{i}" for i in range(8)]
ROUNDS = 4
FLAGS = ("--hold-after=0", "--plan-timeout=1", "--scheduler-name=rdma-scheduler")


def cluster(busy: bool) -> list[tuple[str, Json]]:
    """8 nodes in 2 leaves; with `busy`, another namespace's priority-0 pod on each."""
    found = [
        ("nodes", nodes.node(n, nodes.hgx(), labels={keys.LEAF: f"leaf-{i // 4}"}))
        for i, n in enumerate(NAMES)
    ]
    if busy:
        for n in NAMES:
            found.append(("pods", in_team_b(nodes.pod(f"job-{n}", node_name=n, phase="Running"))))
    return found


def in_team_b(pod: Json) -> Json:
    pod["metadata"]["namespace"] = "team-b"
    return pod


def member(gang: str, index: int, size: int, priority: int, never: bool = False) -> Json:
    pod = nodes.pod(f"{gang}-{index}", annotations={keys.GANG: gang, keys.GANG_SIZE: str(size)})
    pod["spec"].update(priority=priority, schedulerName="rdma-scheduler")
    if never:
        pod["spec"]["preemptionPolicy"] = "Never"
    return pod


class Extender:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def post(self, verb: str, body: Json) -> Json:
        async with self.session.post(f"{self.url}/{verb}", data=orjson.dumps(body)) as response:
            assert response.status == 200, await response.text()
            answer: Json = orjson.loads(await response.read())
            return answer

    async def filter(self, pod: Json) -> Json:
        return await self.post("filter", {"Pod": pod, "NodeNames": NAMES})

    async def preempt(self, pod: Json) -> Json:
        victims = {"n0": {"Pods": [{"UID": "uid-job-n0"}], "NumPDBViolations": 0}}
        return await self.post("preempt", {"Pod": pod, "NodeNameToMetaVictims": victims})

    async def ready(self) -> bool:
        async with self.session.get(f"{self.url}/readyz") as response:
            return response.status == 200


@asynccontextmanager
async def extender(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Extender]:
    kubeconfig = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    argv = [sys.executable, "-m", "kube_rdma_cli", "extender", f"--kubeconfig={kubeconfig}"]
    with Child([*argv, "--host=127.0.0.1", "--port=0", *FLAGS]) as child:
        said = await asyncio.to_thread(
            child.stderr.wait_for, r"extender listening on (http://127\.0\.0\.1:\d+)"
        )
        async with aiohttp.ClientSession() as session:
            found = Extender(session, said[1])
            await until(found.ready)
            yield found
        child.process.terminate()
        child.wait()


async def until(check: Callable[[], Any], within: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "not within the time allowed"
        await asyncio.sleep(0.05)


def evictions(fake_api: FakeApiServer) -> list[str]:
    """The evictions asked of the apiserver, dry runs included."""
    return [
        r.path for r in fake_api.requests if r.method == "POST" and r.path.endswith("/eviction")
    ]


def records(fake_api: FakeApiServer) -> list[str]:
    """The gang plans and holds recorded."""
    return [c["metadata"]["name"] for c in fake_api.objects("configmaps", "kube-rdma")]


async def rounds(ext: Extender, pod: Json, verbs: bool = True) -> list[Json]:
    """Rounds of kube-scheduler's calls for `pod`, the plans expiring and the sweep running
    between them; the filter's answers."""
    answers = []
    for _ in range(ROUNDS):
        if verbs:
            answers.append(await ext.filter(pod))
            assert await ext.preempt(pod) == {"NodeNameToMetaVictims": {}}
        await asyncio.sleep(1.5)
    return answers


async def test_one_pod_declaring_a_gang_of_8_evicts_nothing(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    fake_api.restore(cluster(busy=True))
    lone = fake_api.create("pods", member("big", 0, 8, priority=100), "team-a")
    async with extender(fake_api, tmp_path) as ext:
        answers = await rounds(ext, lone)
    waiting = "gang team-a/big: 1 of 8 members exist; waiting for the rest"
    assert all(a["FailedAndUnresolvableNodes"] == dict.fromkeys(NAMES, waiting) for a in answers)
    assert evictions(fake_api) == [], "kube-scheduler alone would evict at most 1 for one pod"
    assert len(fake_api.objects("pods", "team-b")) == 8
    assert records(fake_api) == []


async def test_the_sweep_alone_does_not_act_for_it(fake_api: FakeApiServer, tmp_path: Path) -> None:
    fake_api.restore(cluster(busy=True))
    fake_api.create("pods", member("big", 0, 8, priority=100), "team-a")
    async with extender(fake_api, tmp_path) as ext:
        await rounds(ext, {}, verbs=False)
    assert evictions(fake_api) == []
    assert records(fake_api) == []


async def test_a_declared_but_absent_gang_reserves_no_node(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    fake_api.restore(cluster(busy=False))
    lone = fake_api.create("pods", member("big", 0, 4, priority=0, never=True), "team-a")
    async with extender(fake_api, tmp_path) as ext:
        await rounds(ext, lone)
        other = await ext.filter(in_team_b(nodes.pod("solo")))
    assert other["NodeNames"] == NAMES
    assert records(fake_api) == []


async def test_a_never_gang_holds_nothing_and_evicts_nothing(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    fake_api.restore(cluster(busy=True))
    made = [member("never", i, 4, priority=100, never=True) for i in range(4)]
    gang = [fake_api.create("pods", pod, "team-a") for pod in made]
    async with extender(fake_api, tmp_path) as ext:
        await rounds(ext, gang[0])
        other = await ext.filter(in_team_b(nodes.pod("solo")))
    assert not any("held for gang" in r for r in other["FailedAndUnresolvableNodes"].values())
    assert evictions(fake_api) == []
    assert records(fake_api) == []
