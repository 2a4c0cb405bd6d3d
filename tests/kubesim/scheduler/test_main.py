"""`python -m kubesim.scheduler` as the process the failover harness starts: it syncs, takes
the Lease, schedules through its extender, and exits 1 once it can no longer renew the Lease
(as kube-scheduler does), or 0 on Ctrl-C or SIGTERM, handing the Lease back."""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import UTC, datetime

from testbed.builders import nodes
from testbed.fakeapi import FakeApiServer, eventually
from testbed.processes import Child
from tests.kubesim.scheduler.stub_extender import StubExtender

LEASE = ["--lease-duration", "2", "--renew-deadline", "1.5", "--retry-period", "0.2"]


def replica(api: FakeApiServer, extender: str) -> Child:
    argv = [sys.executable, "-m", "kubesim.scheduler", "--apiserver", api.host]
    return Child([*argv, "--extender", extender, "--identity", "a", *LEASE], stdout=True)


async def said(child: Child, pattern: str) -> str:
    assert child.stdout is not None
    return (await asyncio.to_thread(child.stdout.wait_for, pattern))[0]


async def test_it_leads_schedules_and_exits_1_when_it_cannot_renew(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    extender, url = stub
    fake_api.create("nodes", nodes.node("n1", nodes.hgx()))
    fake_api.create("pods", nodes.pod("w"), "team-a")
    with replica(fake_api, url) as child:
        await said(child, r"^synced \d+\.\d{3}$")
        await said(child, r"^leading \d+\.\d{3}$")
        holder = fake_api.get("leases", "rdma-scheduler", "kube-rdma")["spec"]["holderIdentity"]
        assert holder == "a"
        await eventually(
            lambda: fake_api.get("pods", "w", "team-a")["spec"].get("nodeName") == "n1",
            within=60,
        )
        assert extender.verbs()[-1] == "bind"
        fake_api.faults.unavailable = True  # no renewal reaches the apiserver any more
        await said(child, r"^lost the lease \d+\.\d{3}$")
        assert await asyncio.to_thread(child.wait) == 1


async def test_ctrl_c_stops_it_with_0_and_hands_the_lease_back(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    _, url = stub
    with replica(fake_api, url) as child:
        await said(child, r"^leading ")
        child.process.send_signal(signal.SIGINT)
        await said(child, r"^stopped \d+\.\d{3}$")
        assert await asyncio.to_thread(child.wait) == 0, child.stderr.text
    lease = fake_api.get("leases", "rdma-scheduler", "kube-rdma")
    assert lease["spec"].get("holderIdentity") is None


async def test_sigterm_while_waiting_for_the_lease_stops_it_with_0(
    fake_api: FakeApiServer, stub: tuple[StubExtender, str]
) -> None:
    """The Lease held by another replica: it waits, and a stop ends the wait."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    held = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "rdma-scheduler", "namespace": "kube-rdma"},
        "spec": {"holderIdentity": "b", "leaseDurationSeconds": 3600, "renewTime": now},
    }
    fake_api.create("leases", held, "kube-rdma")
    _, url = stub
    with replica(fake_api, url) as child:
        await said(child, r"^synced ")
        child.process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(child.wait) == 0, child.stderr.text
