"""Gang pods for the e2e tests and bench, waiting on what the apiserver stores of them, and
the restart of the extender (or the whole scheduler pair) with a gang at its bind barrier."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.controlplane.components import Stack
from testbed.controlplane.rest import Rest

SCHEDULER = "rdma-scheduler"
ARRIVE_SECONDS = 60.0
BOUND_SECONDS = 180.0
AT_BARRIER = "kube_rdma_gang_members_at_barrier"


def gang_pod(name: str, namespace: str, gang: str, size: int, gpus: int = 8) -> Json:
    """An 8-GPU member of a kube-rdma.io/gang, for rdma-scheduler."""
    annotations = {keys.GANG: gang, keys.GANG_SIZE: str(size)}
    pod = nodes.pod(name, gpus=gpus, annotations=annotations, namespace=namespace)
    del pod["metadata"]["uid"], pod["status"]
    pod["spec"]["schedulerName"] = SCHEDULER
    return pod


def members(gang: str, namespace: str, size: int) -> list[Json]:
    return [gang_pod(f"{gang}-{i}", namespace, gang, size) for i in range(size)]


def create_pods(api: Rest, pods: Iterable[Json]) -> None:
    for pod in pods:
        api.post(f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", pod)


def placements(api: Rest, namespace: str, prefix: str) -> dict[str, str | None]:
    """Pod name -> the node the apiserver stores for it (None: not bound)."""
    found = api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName")
        for p in found
        if p["metadata"]["name"].startswith(prefix + "-")
    }


def wait_bound(api: Rest, namespace: str, gang: str, size: int, within: float = 120.0) -> float:
    """Seconds until all `size` members are bound; AssertionError with where they are when
    `within` passes first."""
    start = time.monotonic()
    while True:
        where = placements(api, namespace, gang)
        if len(where) == size and all(where.values()):
            return time.monotonic() - start
        if time.monotonic() - start > within:
            raise AssertionError(f"gang {gang} not bound whole after {within}s: {where}")
        time.sleep(0.05)


def leaf_of(node: str) -> str:
    """gpu-l2-3 -> leaf-2 (the e2e cluster's naming)."""
    return f"leaf-{node.split('-')[1].removeprefix('l')}"


def spine_of(node: str) -> str:
    return f"spine-{int(node.split('-')[1].removeprefix('l')) // 2}"


def extender_metric(stack: Stack, name: str) -> float:
    """One unlabelled sample of the extender's metrics (its own port)."""
    url = f"http://127.0.0.1:{stack.extender_metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return next(
        float(line.split(" ")[1]) for line in text.splitlines() if line.startswith(name + " ")
    )


def known_to_extender(stack: Stack, namespace: str, name: str) -> bool:
    """Whether the extender's cache holds the pod and every member its gang declares."""
    query = urllib.parse.urlencode({"namespace": namespace, "name": name})
    url = f"http://127.0.0.1:{stack.extender_port}/explain?{query}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            gang = json.loads(response.read()).get("gang") or {}
    except urllib.error.HTTPError:  # not in its cache yet
        return False
    return "waitingFor" not in gang


def all_but_one_at_the_barrier(
    stack: Stack, api: Rest, namespace: str, gang: str, size: int
) -> None:
    """Create all members but the last and wait until each has reached the bind barrier (its
    bind request timed out there; it stays arrived). A gang acts only once its declared members
    exist, so a stand-in for the last one exists too: a member of another scheduler's, which
    rdma-scheduler never sends to the barrier (and whose name is outside the gang's prefix).

    kube-scheduler is stopped while the members are created, and started once the extender's
    cache holds them all: a member filtered before the others exist is refused as waiting for
    them, and 1.20 parks a refused pod for 60-90 s (docs/ha.md), which is not what this tests."""
    assert stack.scheduler is not None
    stack.scheduler.kill()
    stand_in = gang_pod(f"stand-in-for-{gang}", namespace, gang, size)
    stand_in["spec"]["schedulerName"] = "no-such-scheduler"
    create_pods(api, [stand_in])
    create_pods(api, [gang_pod(f"{gang}-{i}", namespace, gang, size) for i in range(size - 1)])
    deadline = time.monotonic() + ARRIVE_SECONDS
    while not known_to_extender(stack, namespace, f"{gang}-0"):
        if time.monotonic() > deadline:
            raise AssertionError(f"the extender did not see the {size} members of {gang}")
        time.sleep(0.1)
    stack.start_scheduler()
    while extender_metric(stack, AT_BARRIER) < size - 1:
        if time.monotonic() > deadline:
            raise AssertionError(f"{size - 1} members of {gang} did not reach the bind barrier")
        time.sleep(0.1)


def restart_mid_barrier(
    stack: Stack, api: Rest, namespace: str, gang: str, size: int, *, pair: bool
) -> float:
    """Kill the extender (`pair`: and kube-scheduler) with all but one member of a new gang at
    its bind barrier, create the last member while they are down, restart them: the seconds
    from the restart to the gang bound whole. AssertionError if anything binds before."""
    assert stack.extender is not None
    assert stack.scheduler is not None
    all_but_one_at_the_barrier(stack, api, namespace, gang, size)
    stack.extender.kill()
    if pair:
        stack.scheduler.kill()
    create_pods(api, [gang_pod(f"{gang}-{size - 1}", namespace, gang, size)])
    unbound = placements(api, namespace, gang)
    if set(unbound.values()) != {None}:
        raise AssertionError(f"members of {gang} bound before the restart: {unbound}")
    start = time.monotonic()
    stack.start_extender()
    if pair:
        stack.start_scheduler()
    wait_bound(api, namespace, gang, size, within=BOUND_SECONDS)
    return time.monotonic() - start
