"""Preemption carried out as kube-scheduler does it, over HTTP against the fake apiserver and an
extender with a preemptVerb: each test names the upstream function it checks (kubernetes
pkg/scheduler/framework/preemption/preemption.go, pkg/scheduler/extender.go, 1.30 to 1.34)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kube_rdma.core.objects import Json
from kubesim.scheduler import EmulatedScheduler, SchedulerConfig
from kubesim.scheduler.apiserver import connect
from testbed.fakeapi import FakeApiServer
from testbed.fakeapi.store import Resource
from testbed.net import serving
from tests.kubesim.scheduler.cluster import node, pod
from tests.kubesim.scheduler.preempting_extender import PreemptingExtender

PLAIN = SchedulerConfig(use_extender=False, backoff_initial=0.05, backoff_max=0.2)
WITH_VERB = SchedulerConfig(backoff_initial=0.05, backoff_max=0.2, preempt_via_extender=True)
CONDITION = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "default-scheduler: preempting to accommodate a higher priority pod",
}


@pytest.fixture
async def extender(fake_api: FakeApiServer) -> AsyncIterator[tuple[PreemptingExtender, str]]:
    found = PreemptingExtender(fake_api)
    async with serving(found.app()) as url:
        yield found, url


def running(name: str, node_name: str, priority: int = 0, gpus: int = 8) -> Json:
    found = pod(name, gpus=gpus)
    found["spec"] |= {"nodeName": node_name, "priority": priority}
    found["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    return found


def pending(name: str, priority: int, gpus: int = 8, **spec: Any) -> Json:
    found = pod(name, gpus=gpus)
    found["spec"] |= {"priority": priority, **spec}
    return found


def cluster(fake_api: FakeApiServer, nodes: int) -> list[str]:
    """`nodes` full nodes, n1... each running a low-priority pod l1...; their uids."""
    fake_api.install("poddisruptionbudgets", Resource("PodDisruptionBudget", True, "policy/v1"))
    fake_api.install("events", Resource("Event", True))
    uids = []
    for i in range(1, nodes + 1):
        fake_api.create("nodes", node(f"n{i}"))
        uids.append(fake_api.create("pods", running(f"l{i}", f"n{i}"))["metadata"]["uid"])
    return uids


def requests(fake_api: FakeApiServer) -> list[tuple[str, str, Any]]:
    """The writes of preemption: status patches, deletes, events."""
    return [
        (r.method, r.path, r.body)
        for r in fake_api.requests
        if r.method in ("PATCH", "DELETE") or r.path.endswith("/events")
    ]


async def test_a_victim_is_marked_then_deleted_and_the_preemptor_nominated(
    fake_api: FakeApiServer,
) -> None:
    """preemption.go Evaluator.Preempt and PreemptPod: the DisruptionTarget condition is
    patched before the delete, so the DELETED event carries it; an Event `Preempted`; the
    preemptor nominated (schedule_one.go handleSchedulingFailure); then bound there."""
    cluster(fake_api, 1)
    async with connect(fake_api.host) as api:
        _, version = await api.list("pods")
        async with EmulatedScheduler(fake_api.host, None, PLAIN) as scheduler:
            fake_api.create("pods", pending("p", 100))
            high_uid = fake_api.get("pods", "p", "team-a")["metadata"]["uid"]
            placed = await scheduler.run_until(
                lambda: any(b.pod == ("team-a", "p") for b in scheduler.binds), timeout=30.0
            )
        deleted = None
        async for event in api.watch("pods", version):
            if event["type"] == "DELETED":
                deleted = event["object"]
                break
    attempt = scheduler.attempts[0]
    assert (attempt.outcome, attempt.nominated, attempt.victims) == (
        "unschedulable",
        "n1",
        (("team-a", "l1"),),
    )
    assert attempt.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    assert placed
    assert scheduler.binds[0].node == "n1"
    assert deleted is not None
    conditions = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in deleted["status"]["conditions"]
    ]
    assert conditions == [CONDITION]
    writes = requests(fake_api)
    assert [(method, path) for method, path, _ in writes] == [
        ("PATCH", "/api/v1/namespaces/team-a/pods/l1/status"),
        ("DELETE", "/api/v1/namespaces/team-a/pods/l1"),
        ("POST", "/api/v1/namespaces/team-a/events"),
        ("PATCH", "/api/v1/namespaces/team-a/pods/p/status"),
    ]
    assert writes[3][2] == {"status": {"nominatedNodeName": "n1"}}
    event = fake_api.objects("events", "team-a")[0]
    assert (event["reason"], event["message"], event["involvedObject"]["name"]) == (
        "Preempted",
        f"Preempted by pod {high_uid} on node n1",
        "l1",
    )


async def test_a_nominated_node_is_kept_for_its_pod(fake_api: FakeApiServer) -> None:
    """framework/runtime RunFilterPluginsWithNominatedPods: once the victim is gone, a
    lower-priority pod does not fit where a higher one is nominated."""
    cluster(fake_api, 1)
    async with EmulatedScheduler(fake_api.host, None, PLAIN) as scheduler:
        fake_api.create("pods", pending("p", 100))
        await scheduler.run_until(lambda: len(scheduler.attempts) == 1, timeout=30.0)
        fake_api.create("pods", pending("mid", 50))
        await scheduler.run_until(
            lambda: any(a.pod == ("team-a", "mid") for a in scheduler.attempts), timeout=30.0
        )
    mid = next(a for a in scheduler.attempts if a.pod == ("team-a", "mid"))
    assert (mid.outcome, mid.message) == (
        "unschedulable",
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.",
    )


async def test_lower_priority_nominations_on_the_node_are_cleared(fake_api: FakeApiServer) -> None:
    """preemption.go prepareCandidate, getLowerPriorityNominatedPods and
    clearNominatedNodeName."""
    cluster(fake_api, 1)
    mid = pending("mid", 50, gpus=8)
    mid["status"]["nominatedNodeName"] = "n1"
    fake_api.create("pods", mid)
    fake_api.create("pods", pending("p", 100))  # first in the queue, by priority
    async with EmulatedScheduler(fake_api.host, None, PLAIN) as scheduler:
        await scheduler.run_until(
            lambda: any(a.pod == ("team-a", "p") for a in scheduler.attempts), timeout=30.0
        )
    cleared = [
        body
        for method, path, body in requests(fake_api)
        if path == "/api/v1/namespaces/team-a/pods/mid/status"
    ]
    assert cleared[0] == {"status": {"nominatedNodeName": None}}


async def test_preemption_policy_never_preempts_nothing(fake_api: FakeApiServer) -> None:
    """default_preemption.go PodEligibleToPreemptOthers: the message kube-scheduler records."""
    cluster(fake_api, 1)
    async with EmulatedScheduler(fake_api.host, None, PLAIN) as scheduler:
        fake_api.create("pods", pending("p", 100, preemptionPolicy="Never"))
        await scheduler.run_until(lambda: len(scheduler.attempts) == 1, timeout=30.0)
    assert scheduler.attempts[0].message == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: not eligible due "
        "to preemptionPolicy=Never."
    )
    assert requests(fake_api) == []


async def test_the_extender_is_sent_the_candidates_by_uid_and_its_choice_is_applied(
    fake_api: FakeApiServer, extender: tuple[PreemptingExtender, str]
) -> None:
    """extender.go ProcessPreemption (nodeCacheCapable: NodeNameToMetaVictims, victims by UID)
    and preemption.go callExtenders: the nodes the extender leaves out are out."""
    found, url = extender
    uids = cluster(fake_api, 2)
    found.answer = lambda victims: {"n2": victims["n2"]}
    async with EmulatedScheduler(fake_api.host, url, WITH_VERB) as scheduler:
        fake_api.create("pods", pending("p", 100))
        await scheduler.run_until(lambda: len(scheduler.attempts) == 1, timeout=30.0)
    (_, body), *_ = [c for c in found.calls if c[0] == "preempt"]
    assert body["Pod"]["metadata"]["name"] == "p"
    assert (body["NodeNameToVictims"], body["NodeNameToMetaVictims"]) == (
        None,
        {
            "n1": {"Pods": [{"UID": uids[0]}], "NumPDBViolations": 0},
            "n2": {"Pods": [{"UID": uids[1]}], "NumPDBViolations": 0},
        },
    )
    attempt = scheduler.attempts[0]
    assert (attempt.nominated, attempt.victims) == ("n2", (("team-a", "l2"),))


@pytest.mark.parametrize(
    ("answer", "ignorable", "expected"),
    [
        # a node answered without victims fails the whole preemption...
        (lambda v, u: {"n1": {"Pods": []}, "n2": v["n2"]}, False,
         'expected at least one victim pod on node "n1"'),
        # ... unless the extender is ignorable: then the node is dropped
        (lambda v, u: {"n1": {"Pods": []}, "n2": v["n2"]}, True, "nominated n2"),
        # a UID is looked up among the pods on its own node
        (lambda v, u: {"n1": {"Pods": [{"UID": u[1]}]}}, False,
         "extender: {url} claims to preempt pod (UID: &{{{uid}}}) on node: n1, but the pod is "
         "not found on that node"),
        (lambda v, u: {"n9": {"Pods": [{"UID": u[0]}]}}, False,
         'nodeinfo not found for node name "n9"'),
        # an empty answer leaves no candidate
        (lambda v, u: {}, False, "no candidate node for preemption"),
    ],
)  # fmt: skip
async def test_the_extenders_answer_is_checked_as_kube_scheduler_checks_it(
    fake_api: FakeApiServer,
    extender: tuple[PreemptingExtender, str],
    answer: Any,
    ignorable: bool,
    expected: str,
) -> None:
    """preemption.go callExtenders (empty victim lists, IsIgnorable) and extender.go
    convertToVictims / convertPodUIDToPod; `expected` is the node nominated, or the message."""
    found, url = extender
    uids = cluster(fake_api, 2)
    found.answer = lambda victims: answer(victims, uids)
    config = SchedulerConfig(
        backoff_initial=0.05, preempt_via_extender=True, extender_ignorable=ignorable
    )
    async with EmulatedScheduler(fake_api.host, url, config) as scheduler:
        fake_api.create("pods", pending("p", 100))
        await scheduler.run_until(lambda: len(scheduler.attempts) == 1, timeout=30.0)
    attempt = scheduler.attempts[0]
    fit = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    if expected.startswith("nominated "):
        assert (attempt.nominated, attempt.message) == (expected.split()[1], fit)
    else:
        message = expected.format(url=url, uid=uids[1])
        assert (attempt.nominated, attempt.message) == (None, f"{fit} preemption: {message}")
        assert requests(fake_api) == []


@pytest.mark.parametrize(("ignorable", "nominated"), [(False, None), (True, "n1")])
async def test_an_extender_error_fails_preemption_unless_ignorable(
    fake_api: FakeApiServer,
    extender: tuple[PreemptingExtender, str],
    ignorable: bool,
    nominated: str | None,
) -> None:
    """preemption.go callExtenders: ProcessPreemption's error fails the preemption, or the
    extender is skipped when ignorable."""
    found, url = extender
    cluster(fake_api, 1)
    found.status = 500
    config = SchedulerConfig(
        backoff_initial=0.05, preempt_via_extender=True, extender_ignorable=ignorable
    )
    async with EmulatedScheduler(fake_api.host, url, config) as scheduler:
        fake_api.create("pods", pending("p", 100))
        await scheduler.run_until(lambda: len(scheduler.attempts) == 1, timeout=30.0)
    attempt = scheduler.attempts[0]
    assert attempt.nominated == nominated
    if not ignorable:
        assert attempt.message.endswith(
            f"preemption: failed preempt with extender at URL {url}/preempt, code 500"
        )


async def test_only_nodes_failed_as_resolvable_are_candidates(
    fake_api: FakeApiServer, extender: tuple[PreemptingExtender, str]
) -> None:
    """schedule_one.go findNodesThatPassExtenders (FailedAndUnresolvableNodes are
    UnschedulableAndUnresolvable) and preemption.go findCandidates / DryRunPreemption: a node
    where the preemptor fits with no victim removed is an error, not a candidate."""
    found, url = extender
    fake_api.install("poddisruptionbudgets", Resource("PodDisruptionBudget", True, "policy/v1"))
    for name in ("n1", "n2"):
        fake_api.create("nodes", node(name))
        fake_api.create("pods", running(f"l-{name}", name, gpus=4))
    found.unresolvable = {"n1": "no RDMA rail"}
    found.failed = {"n2": "planned for another gang"}
    async with EmulatedScheduler(fake_api.host, url, WITH_VERB) as scheduler:
        fake_api.create("pods", pending("p", 100, gpus=4))
        await scheduler.run_until(lambda: len(scheduler.attempts) == 1, timeout=30.0)
    assert scheduler.attempts[0].message == (
        "0/2 nodes are available: 1 no RDMA rail, 1 planned for another gang. preemption: "
        'expected at least one victim pod on node "n2"'
    )
    assert [verb for verb, _ in found.calls] == ["filter"]


async def test_a_budget_counts_as_a_violation_in_the_preempt_call(
    fake_api: FakeApiServer, extender: tuple[PreemptingExtender, str]
) -> None:
    """preemption.go DryRunPreemption / default_preemption.go filterPodsWithPDBViolation: the
    budget's disruptionsAllowed is read from its status; the count goes to the extender."""
    found, url = extender
    uids = cluster(fake_api, 1)
    fake_api.patch("pods", "l1", {"metadata": {"labels": {"app": "db"}}}, namespace="team-a")
    budget = {
        "metadata": {"name": "db", "namespace": "team-a"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": 0},
    }
    fake_api.create("poddisruptionbudgets", budget)
    async with EmulatedScheduler(fake_api.host, url, WITH_VERB) as scheduler:
        fake_api.create("pods", pending("p", 100))
        await scheduler.run_until(lambda: len(scheduler.attempts) == 1, timeout=30.0)
    (_, body), *_ = [c for c in found.calls if c[0] == "preempt"]
    assert body["NodeNameToMetaVictims"] == {
        "n1": {"Pods": [{"UID": uids[0]}], "NumPDBViolations": 1}
    }
    assert scheduler.attempts[0].nominated == "n1"


async def test_a_node_failed_by_a_taint_is_no_candidate(fake_api: FakeApiServer) -> None:
    """schedule_one.go and preemption.go findCandidates (NodesForStatusCode(Unschedulable)):
    TaintToleration fails a node as UnschedulableAndUnresolvable, NodeResourcesFit as
    Unschedulable; only the latter is dry-run."""
    cluster(fake_api, 2)
    fake_api.patch(
        "nodes", "n1", {"spec": {"taints": [{"key": "pool", "value": "b", "effect": "NoSchedule"}]}}
    )
    async with EmulatedScheduler(fake_api.host, None, PLAIN) as scheduler:
        fake_api.create("pods", pending("p", 100))
        await scheduler.run_until(lambda: len(scheduler.attempts) == 1, timeout=30.0)
    attempt = scheduler.attempts[0]
    assert (attempt.nominated, attempt.victims) == ("n2", (("team-a", "l2"),))
    assert attempt.message == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint "
        "{pool: b}."
    )
