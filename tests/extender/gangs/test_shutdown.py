"""SIGTERM while gang members wait at the bind barrier: `kube-rdma extender` answers their binds
with an error at once, instead of holding its shutdown up until the barrier timeout, and exits."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import orjson

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.processes import ChildOutput

MEMBERS = [
    nodes.pod(f"trio-{i}", annotations={keys.GANG: "trio", keys.GANG_SIZE: "3"}) for i in range(3)
]
for member in MEMBERS:
    member["spec"]["schedulerName"] = "rdma-scheduler"  # the extender binds only its own pods
NAMES = ["a0", "a1", "a2"]
SHUTTING_DOWN = (
    "the kube-rdma extender is shutting down; the pod is retried, and the extender that serves "
    "next finishes its gang"
)


def start(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    objects = [*(nodes.node(n, nodes.hgx()) for n in NAMES), *MEMBERS]
    snapshot = tmp_path / "cluster.json"
    snapshot.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    command = [sys.executable, "-m", "kube_rdma_cli", "extender", "--host", "127.0.0.1"]
    command += ["--port", "0", "--cluster-snapshot", str(snapshot)]
    command += ["--barrier-timeout", "60", "--barrier-progress-timeout", "60"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    said = ChildOutput(process.stderr).wait_for(r"extender listening on (http://127\.0\.0\.1:\d+)")
    return process, said[1]


async def call(session: aiohttp.ClientSession, url: str, body: Json) -> Json:
    async with session.post(url, data=orjson.dumps(body)) as response:
        answer: Json = orjson.loads(await response.read())
        return answer


async def test_sigterm_fails_the_binds_held_at_the_barrier_at_once(tmp_path: Path) -> None:
    process, base = start(tmp_path)
    try:
        async with aiohttp.ClientSession() as session:
            planned = []
            for pod in MEMBERS:
                answer = await call(session, f"{base}/filter", {"Pod": pod, "NodeNames": NAMES})
                planned.append(answer["NodeNames"][0])
            binds = [
                asyncio.create_task(
                    call(
                        session,
                        f"{base}/bind",
                        {
                            "PodName": f"trio-{i}",
                            "PodNamespace": "team-a",
                            "PodUID": f"uid-trio-{i}",
                            "Node": planned[i],
                        },
                    )
                )
                for i in range(2)
            ]
            await asyncio.sleep(0.5)
            assert not any(b.done() for b in binds), "held: the third member has not arrived"
            process.send_signal(signal.SIGTERM)
            # At once, not after the barrier timeout (60 s): the wait gives up long before it,
            # and the answers are the shutdown's, not the barrier's.
            answers = await asyncio.wait_for(asyncio.gather(*binds), 30.0)
        assert [a["Error"] for a in answers] == [SHUTTING_DOWN, SHUTTING_DOWN]
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        process.wait()
