"""Gangs through the real kube-scheduler: bound whole, in one network domain, or not at all."""

from __future__ import annotations

import subprocess
import time

from extender.book.records import record_name
from kube_rdma.core import keys
from testbed.controlplane.audit import writes
from testbed.controlplane.components import PLAN_NAMESPACE, SCHEDULER_ACCOUNT, Stack, user
from testbed.controlplane.gangs import (
    create_pods,
    leaf_of,
    members,
    placements,
    spine_of,
    wait_bound,
)
from testbed.controlplane.pki import kube_rdma_command
from testbed.controlplane.rest import Rest

NOT_BOUND_SECONDS = 5.0


def scheduled_conditions(api: Rest, namespace: str) -> set[tuple[str, str]]:
    """(status, reason) of the PodScheduled condition kube-scheduler stored on the pods."""
    pods = api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    return {
        (c["status"], c.get("reason", ""))
        for pod in pods
        for c in pod["status"].get("conditions") or []
        if c["type"] == "PodScheduled"
    }


def test_interleaved_gangs_are_each_bound_whole_in_one_leaf(
    api: Rest, namespace: str, timings: dict[str, float]
) -> None:
    a, b = members("ga", namespace, 4), members("gb", namespace, 4)
    start = time.monotonic()
    create_pods(api, [pod for pair in zip(a, b, strict=True) for pod in pair])

    wait_bound(api, namespace, "ga", 4)
    wait_bound(api, namespace, "gb", 4)
    timings["two gangs of 4, interleaved: first create to both bound whole"] = (
        time.monotonic() - start
    )

    for gang in ("ga", "gb"):
        where = placements(api, namespace, gang)
        assert len({leaf_of(node) for node in where.values() if node}) == 1, where
        assert len(set(where.values())) == 4, where


def test_a_gang_wider_than_a_leaf_stays_within_one_spine(
    api: Rest, namespace: str, timings: dict[str, float]
) -> None:
    start = time.monotonic()
    create_pods(api, members("wide", namespace, 6))

    wait_bound(api, namespace, "wide", 6)
    timings["a gang of 6 over two leaves: first create to bound whole"] = time.monotonic() - start

    where = placements(api, namespace, "wide")
    assert len({spine_of(node) for node in where.values() if node}) == 1, where
    assert len({leaf_of(node) for node in where.values() if node}) == 2, where


def test_a_gang_that_cannot_fit_binds_nothing_and_explain_says_why(
    api: Rest, stack: Stack, namespace: str
) -> None:
    create_pods(api, members("big", namespace, 20))
    plans = f"/api/v1/namespaces/{PLAN_NAMESPACE}/configmaps"

    time.sleep(NOT_BOUND_SECONDS)

    assert set(placements(api, namespace, "big").values()) == {None}
    assert scheduled_conditions(api, namespace) == {("False", "Unschedulable")}
    recorded = api.get(plans, labelSelector=keys.GANG_PLAN)["items"]
    assert [m for m in recorded if namespace in str(m.get("data"))] == []
    explained = subprocess.run(
        [
            *kube_rdma_command(),
            "explain",
            f"{namespace}/big-0",
            "--url",
            f"http://127.0.0.1:{stack.extender_port}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    gang_line = next(line for line in explained.splitlines() if line.startswith("gang "))
    assert gang_line == (
        f"gang {namespace}/big of 20 (kube-rdma.io/gang): no plan now: gang {namespace}/big needs "
        "20 x (8 GPU, 8 rails): best domain leaf-3 fits 4, cluster fits 16"
    )


def test_gang_plan_configmaps_are_written_then_removed(
    api: Rest, stack: Stack, namespace: str
) -> None:
    record = record_name((namespace, "rec"))
    create_pods(api, members("rec", namespace, 3))
    wait_bound(api, namespace, "rec", 3)

    deadline = time.monotonic() + 60
    while True:
        done = writes(stack.plane.audit_log, user(SCHEDULER_ACCOUNT), "configmaps", PLAN_NAMESPACE)
        ours = [verb for verb, name in done if name == record]
        if ours == ["create", "delete"]:
            break
        assert time.monotonic() < deadline, f"writes of {record}: {ours}"
        time.sleep(0.2)
    assert not api.exists(f"/api/v1/namespaces/{PLAN_NAMESPACE}/configmaps/{record}")
