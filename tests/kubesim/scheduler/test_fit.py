"""The emulated in-tree filters: NodeUnschedulable, TaintToleration, NodeAffinity, then
NodeResourcesFit, in the order of kube-scheduler's default profile
(pkg/scheduler/apis/config/v1/default_plugins.go), each failing with the plugin's own reason,
and FitError's message over them."""

from __future__ import annotations

from typing import Any

import pytest

from kube_rdma.core.nodeconstraints import NodeConstraints
from kube_rdma.core.objects import Json
from kubesim.scheduler import GPU, EmulatedScheduler, SchedulerConfig
from kubesim.scheduler.fit import fit_error, fit_failure, node_facts
from testbed.fakeapi import FakeApiServer
from tests.kubesim.scheduler.cluster import node, pod


def with_spec(obj: Json, **spec: Any) -> Json:
    return {**obj, "spec": {**(obj.get("spec") or {}), **spec}}


def not_ready(obj: Json) -> Json:
    return {
        **obj,
        "status": {**obj["status"], "conditions": [{"type": "Ready", "status": "False"}]},
    }


TAINT = {"key": "pool", "value": "b", "effect": "NoSchedule"}
TOLERATION = {"key": "pool", "operator": "Equal", "value": "b", "effect": "NoSchedule"}
CASES = [
    ("fits", pod("p", gpus=8), node("n"), {}, None),
    ("resources", pod("p", gpus=8), node("n"), {GPU: 1}, "Insufficient nvidia.com/gpu"),
    (
        "cordoned",
        pod("p"),
        with_spec(node("n"), unschedulable=True),
        {},
        "node(s) were unschedulable",
    ),
    (
        "tainted",
        pod("p"),
        with_spec(node("n"), taints=[TAINT]),
        {},
        "node(s) had untolerated taint {pool: b}",
    ),
    (
        "tainted, tolerated",
        with_spec(pod("p"), tolerations=[TOLERATION]),
        with_spec(node("n"), taints=[TAINT]),
        {},
        None,
    ),
    (
        "not ready",
        pod("p"),
        not_ready(node("n")),
        {},
        "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
    ),
    (
        "another pool",
        with_spec(pod("p"), nodeSelector={"pool": "a"}),
        node("n", labels={"pool": "b"}),
        {},
        "node(s) didn't match Pod's node affinity/selector",
    ),
    (
        "affinity before resources",
        with_spec(pod("p", gpus=8), nodeSelector={"pool": "a"}),
        node("n", labels={"pool": "b"}),
        {GPU: 8},
        "node(s) didn't match Pod's node affinity/selector",
    ),
    (
        "its pool",
        with_spec(pod("p"), nodeSelector={"pool": "a"}),
        node("n", labels={"pool": "a"}),
        {},
        None,
    ),
]


@pytest.mark.parametrize(
    ("the_pod", "the_node", "used", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_fit_failure(
    the_pod: Json, the_node: Json, used: dict[str, int], reason: str | None
) -> None:
    requests = {GPU: int(the_pod["spec"]["containers"][0]["resources"]["limits"][GPU])}
    constraints = NodeConstraints.of(the_pod)
    assert fit_failure(node_facts(the_node), used, requests, constraints) == reason


def test_fit_error_counts_each_reason() -> None:
    failed = {
        "n1": "node(s) didn't match Pod's node affinity/selector",
        "n2": "node(s) didn't match Pod's node affinity/selector",
        "n3": "node(s) were unschedulable",
    }
    assert fit_error(4, failed) == (
        "0/4 nodes are available: 1 node(s) were unschedulable, "
        "2 node(s) didn't match Pod's node affinity/selector."
    )


async def test_the_emulator_places_a_pod_in_its_pool_only(fake_api: FakeApiServer) -> None:
    fake_api.create("nodes", node("a1", labels={"pool": "a"}))
    fake_api.create("nodes", with_spec(node("b1", labels={"pool": "b"}), taints=[TAINT]))
    fake_api.create("nodes", with_spec(node("c1", labels={"pool": "a"}), unschedulable=True))
    config = SchedulerConfig(use_extender=False)
    async with EmulatedScheduler(fake_api.host, None, config) as scheduler:
        for name in ("w0", "w1"):
            fake_api.create("pods", with_spec(pod(name, gpus=8), nodeSelector={"pool": "a"}))
        done = await scheduler.run_until(
            lambda: len(scheduler.binds) == 1 and len(scheduler.attempts) == 2, timeout=30.0
        )
    assert done
    assert [(b.pod[1], b.node) for b in scheduler.binds] == [("w0", "a1")]
    assert [(a.pod[1], a.outcome, a.message) for a in scheduler.attempts[1:]] == [
        (
            "w1",
            "unschedulable",
            "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
            "1 node(s) had untolerated taint {pool: b}, 1 node(s) were unschedulable. "
            # kube-scheduler's preemption tries only the node NodeResourcesFit failed
            "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming "
            "pod, 2 Preemption is not helpful for scheduling.",
        )
    ]
