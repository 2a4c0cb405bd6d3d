"""The failure verdicts of `kube-rdma acceptance run`, against the fake apiserver with the test
playing the kubelet: a test that never finishes, a launcher log with no result in it, a soak
whose bus bandwidth sinks, and a link that flapped during a soak; and the command itself, run
from the CLI as a user types it."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from fabric import nccl_tests
from fabric.plan import Mode
from fabric.render import Options, SshKey
from fabric.run import AcceptanceRun, Outcome, Settings
from fabric.verdict import link_flaps, soak_reasons
from kube_rdma.core import keys
from kube_rdma.core.topology import decode
from kube_rdma_cli.dispatch import main
from testbed.builders.nodes import hgx, node
from testbed.fakeapi import RESOURCES, FakeApiServer, Resource
from testbed.fakeapi.kubeconfig import kubeconfig

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nccl-tests"
GOOD = (FIXTURES / "h100-ib-2node.txt").read_text()
SOAK_DROP = (FIXTURES / "soak-drop.txt").read_text()
NS = "acceptance"
KEY = SshKey("PRIVATE", "ssh-ed25519 AAAA test\n")
Finish = Callable[[FakeApiServer, str], None]


@pytest.fixture
async def fake() -> AsyncIterator[FakeApiServer]:
    resources = {
        **RESOURCES,
        "services": Resource("Service", namespaced=True),
        "secrets": Resource("Secret", namespaced=True),
    }
    async with FakeApiServer(resources) as server:
        for name in ("n1", "n2"):
            server.create("nodes", node(name, hgx("InfiniBand"), labels={keys.LEAF: "leaf-a"}))
        yield server


def finishing(log: str, flap: str | None = None) -> Finish:
    """The kubelet's part: the launcher prints `log` and succeeds; a link of node `flap`
    goes down and up again (its link_downed counter grows) while the test runs."""

    def finish(fake: FakeApiServer, launcher: str) -> None:
        if flap is not None:
            annotations = fake.get("nodes", flap)["metadata"]["annotations"]
            document = json.loads(annotations[keys.TOPOLOGY])
            document["nics"][0]["ports"][0]["counters"] = {"link_downed": 1}
            patch = {"metadata": {"annotations": {keys.TOPOLOGY: json.dumps(document)}}}
            fake.patch("nodes", flap, patch)
        fake.logs.set(NS, launcher, log)
        fake.patch("pods", launcher, {"status": {"phase": "Succeeded"}}, namespace=NS)

    return finish


async def kubelet(fake: FakeApiServer, finish: Finish | None) -> None:
    """Finish every launcher as `finish` says; None: leave them pending forever."""
    while True:
        for pod in fake.objects("pods", NS):
            meta, phase = pod["metadata"], (pod.get("status") or {}).get("phase")
            if meta["labels"].get(keys.ACCEPTANCE_ROLE) == "launcher" and not phase and finish:
                finish(fake, meta["name"])
        await asyncio.sleep(0.01)


async def run(
    fake: FakeApiServer, finish: Finish | None, soak: int | None = None, seconds: float = 60.0
) -> Outcome:
    options = Options(run="acc", namespace=NS, profile="rails8", gpus_per_node=8, soak_seconds=soak)
    settings = Settings(
        options, ("n1", "n2"), Mode.PAIRS, min_busbw=300.0, round_timeout=seconds, poll=0.01
    )
    player = asyncio.create_task(kubelet(fake, finish))
    try:
        async with fake.api_client() as api:
            runner = AcceptanceRun(client.CoreV1Api(api), settings, KEY, io.StringIO())
            [outcome] = await runner.run()
    finally:
        player.cancel()
    for plural in ("pods", "services", "secrets"):
        assert fake.objects(plural, NS) == [], "cleaned up after a failure too"
    return outcome


async def test_a_test_that_never_finishes_fails_in_time(fake: FakeApiServer) -> None:
    outcome = await run(fake, finish=None, seconds=0.0)
    assert (outcome.passed, outcome.answer, outcome.reasons) == (
        False,
        None,
        ["the test did not finish in time (launcher Pending)"],
    )


async def test_a_launcher_log_without_a_result_fails(fake: FakeApiServer) -> None:
    outcome = await run(fake, finishing("mpirun: cannot connect to n2: Connection refused\n"))
    assert (outcome.passed, outcome.answer, outcome.reasons) == (
        False,
        None,
        [
            "no nccl-tests result in the launcher's log: no nccl-tests result table found (a "
            "header line with size and count)"
        ],
    )


async def test_a_soak_whose_bandwidth_sinks_fails(fake: FakeApiServer) -> None:
    outcome = await run(fake, finishing(SOAK_DROP), soak=60)
    assert outcome.answer is not None
    assert (outcome.answer["verdict"], outcome.passed) == ("pass", False)
    assert outcome.reasons == [
        "bus bandwidth dropped from 372.4 to 301.2 GB/s over the soak (3 repetitions)"
    ]


async def test_a_link_that_flapped_during_a_soak_fails(fake: FakeApiServer) -> None:
    outcome = await run(fake, finishing(GOOD, flap="n2"), soak=60)
    assert outcome.answer is not None
    assert (outcome.answer["verdict"], outcome.passed) == ("pass", False)
    assert outcome.reasons == ["link flap on n2 mlx5_0 port 1: link_downed 0 -> 1"]


async def test_a_soak_that_held_passes(fake: FakeApiServer) -> None:
    outcome = await run(fake, finishing(GOOD), soak=60)
    assert (outcome.passed, outcome.reasons) == (True, [])


def test_soak_reasons_need_two_repetitions_and_a_drop_over_a_tenth() -> None:
    assert soak_reasons(nccl_tests.parse(GOOD)) == []
    assert soak_reasons(nccl_tests.parse(SOAK_DROP)) == [
        "bus bandwidth dropped from 372.4 to 301.2 GB/s over the soak (3 repetitions)"
    ]


def test_link_flaps_name_each_port_whose_counter_grew() -> None:
    text = node("n1", hgx("InfiniBand"))["metadata"]["annotations"][keys.TOPOLOGY]
    document = json.loads(text)
    document["nics"][1]["ports"][0]["counters"] = {"link_downed": 2}
    before, after = decode(text), decode(json.dumps(document))
    assert link_flaps(before, after, "n1") == ["link flap on n1 mlx5_1 port 1: link_downed 0 -> 2"]
    assert link_flaps(after, before, "n1") == [], "a counter that went down (a reboot) is no flap"


async def test_acceptance_run_from_the_command_line(
    fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps(kubeconfig(fake.host)))
    player = asyncio.create_task(kubelet(fake, finishing(GOOD)))
    argv = ["acceptance", "run", "--kubeconfig", str(config), "--nodes", "n1,n2"]
    argv += ["--profile", "rails8", "--namespace", NS, "--min-busbw", "300", "--label"]
    try:
        status = await asyncio.to_thread(main, argv)
    finally:
        player.cancel()
    out, err = capsys.readouterr()
    assert status == 0, err
    lines = out.splitlines()
    assert lines[1].split()[:6] == ["r0-0", "n1,n2", "leaf-a", "374.57", "300", "pass"]
    assert err.splitlines()[-1] == "round 0: r0-0 Succeeded"
    labels = {
        n["metadata"]["name"]: n["metadata"]["labels"][keys.ACCEPTANCE]
        for n in fake.objects("nodes")
    }
    assert labels == {"n1": "passed", "n2": "passed"}
