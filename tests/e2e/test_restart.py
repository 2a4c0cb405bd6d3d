"""A gang mid-barrier survives its extender, or the whole scheduler pair, being killed.

Three members of a gang of four reach the bind barrier (their bind requests time out there and
they stay arrived); then the extender alone is killed while kube-scheduler keeps running, or
both are, and the fourth member is created while they are down. Asserted is only what holds on
every Kubernetes version: nothing is bound while the gang is incomplete, and the gang ends bound
whole. How long that takes depends on the version's scheduling queue (docs/ha.md); the time is
recorded as the 1.20 control plane's.
"""

from __future__ import annotations

import time
import urllib.request

import pytest

from testbed.controlplane.components import Stack
from testbed.controlplane.rest import Rest
from tests.e2e.gangs import create_pods, gang_pod, placements, wait_bound

SIZE = 4
ARRIVE_SECONDS = 60.0
BOUND_SECONDS = 180.0


def bind_calls(stack: Stack) -> float:
    """Bind requests the extender answered (a member that timed out at the barrier counts)."""
    url = f"http://127.0.0.1:{stack.extender_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("kube_rdma_extender_calls_total{") and 'verb="bind"' in line
    )


def three_at_the_barrier(stack: Stack, api: Rest, namespace: str, gang: str) -> None:
    before = bind_calls(stack)
    create_pods(api, [gang_pod(f"{gang}-{i}", namespace, gang, SIZE) for i in range(SIZE - 1)])
    deadline = time.monotonic() + ARRIVE_SECONDS
    while bind_calls(stack) - before < SIZE - 1:
        assert time.monotonic() < deadline, "three members did not reach the bind barrier"
        time.sleep(0.1)
    assert set(placements(api, namespace, gang).values()) == {None}


@pytest.mark.parametrize("restarted", ["extender", "extender and kube-scheduler"])
def test_a_gang_mid_barrier_is_bound_whole_after_a_restart(
    stack: Stack, api: Rest, namespace: str, restarted: str, timings: dict[str, float]
) -> None:
    gang = "pair" if restarted != "extender" else "solo"
    three_at_the_barrier(stack, api, namespace, gang)
    assert stack.extender is not None
    assert stack.scheduler is not None
    stack.extender.kill()
    if restarted != "extender":
        stack.scheduler.kill()
    create_pods(api, [gang_pod(f"{gang}-{SIZE - 1}", namespace, gang, SIZE)])
    assert set(placements(api, namespace, gang).values()) == {None}

    start = time.monotonic()
    stack.start_extender()
    if restarted != "extender":
        stack.start_scheduler()
    wait_bound(api, namespace, gang, SIZE, within=BOUND_SECONDS)

    timings[f"{restarted} restarted mid-barrier: restart to gang of {SIZE} bound whole"] = (
        time.monotonic() - start
    )
    where = placements(api, namespace, gang)
    assert len(set(where.values())) == SIZE, where
