"""The GangScheduling plugin's PreEnqueue and Permit, case by case.

Translated from kubernetes/kubernetes pkg/scheduler/framework/plugins/gangscheduling/
gangscheduling_test.go at release 1.36 (the version that reads scheduling.k8s.io/v1alpha2),
TestGangSchedulingFlow: each test names its case. Cases of our own say so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from kube_rdma.core.objects import Json
from kubesim.scheduler.clock import LoopClock
from kubesim.scheduler.config import SchedulerConfig
from kubesim.scheduler.gangscheduling import (
    WAITING_FOR_MIN_COUNT,
    GangScheduling,
    min_count,
    pod_group_name,
)
from kubesim.scheduler.pods import PodKey


def pod_group(name: str, minimum: int | None) -> Json:
    policy = {"basic": {}} if minimum is None else {"gang": {"minCount": minimum}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"namespace": "ns1", "name": name},
        "spec": {"schedulingPolicy": policy},
    }


def pod(name: str, group: str | None = None) -> Json:
    spec: Json = {"containers": []}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"namespace": "ns1", "name": name}, "spec": spec, "status": {}}


PG1, PG2, PG3 = pod_group("pg1", 3), pod_group("pg2", 4), pod_group("pg3", None)
PODS = {
    "p1": pod("p1", "pg1"),
    "p2": pod("p2", "pg1"),
    "p3": pod("p3", "pg1"),
    "p4": pod("p4", "pg2"),
    "p5": pod("p5", "pg2"),
    "basic-pod": pod("basic-pod", "pg3"),
    "non-gang": pod("non-gang"),
}


def key(name: str) -> PodKey:
    return ("ns1", name)


class Fixture:
    """The plugin over a cache whose assumed pods are `assumed`; `activated` records Activate."""

    def __init__(self, groups: list[Json], pods: list[str], timeout: float = 300.0) -> None:
        self.assumed: set[PodKey] = set()
        self.activated: list[PodKey] = []
        self.plugin = GangScheduling(LoopClock(), self.assumed.__contains__, timeout)
        for group in groups:
            self.plugin.pod_group_changed(None, group)
        for name in pods:
            self.plugin.pod_changed(key(name), None, PODS[name])

    def activate(self, keys: Iterable[PodKey]) -> None:
        self.activated.extend(keys)

    def wait(self, name: str) -> asyncio.Task[str | None]:
        """Assume the pod and run its Permit in the background."""
        self.assumed.add(key(name))
        return asyncio.create_task(self.plugin.permit(key(name), PODS[name], self.activate))


ALL = [PG1, PG2, PG3]


@pytest.mark.parametrize("name", ["non-gang", "basic-pod"])
async def test_non_gang_and_basic_policy_pods_succeed_immediately(name: str) -> None:
    # cases "non-gang pod succeeds immediately", "basic policy pod succeeds immediately"
    fixture = Fixture(ALL, [name])
    assert fixture.plugin.pre_enqueue(key(name), PODS[name]) is None
    assert await fixture.wait(name) is None


def test_gang_pod_fails_pre_enqueue_when_pod_group_is_not_yet_created() -> None:
    # case "gang pod fails PreEnqueue when pod group is not yet created"
    fixture = Fixture([], ["p1", "p2", "p3", "p4", "p5"])
    reason = fixture.plugin.pre_enqueue(key("p1"), PODS["p1"])
    assert reason == 'waiting for pods\'s pod group "pg1" to appear in scheduling queue'


def test_gang_pod_fails_pre_enqueue_when_quorum_is_not_met() -> None:
    # case "gang pod fails PreEnqueue when quorum is not met": only p1 and p2 of minCount 3
    fixture = Fixture([PG1, PG2], ["p1", "p2", "p4", "p5"])
    assert fixture.plugin.pre_enqueue(key("p1"), PODS["p1"]) == WAITING_FOR_MIN_COUNT


async def test_gang_pod_passes_pre_enqueue_but_waits_at_permit() -> None:
    # case "gang pod passes PreEnqueue, but waits at Permit": p2, p4, p5 wait; p1 assumed makes
    # 2 of 3, so it waits too and activates the gang's unscheduled pod p3
    fixture = Fixture([PG1, PG2], ["p1", "p2", "p3", "p4", "p5"])
    assert fixture.plugin.pre_enqueue(key("p1"), PODS["p1"]) is None
    waiting = [fixture.wait(name) for name in ("p2", "p4", "p5")]
    await asyncio.sleep(0)
    fixture.activated.clear()
    p1 = fixture.wait("p1")
    await asyncio.sleep(0)
    assert not p1.done()
    assert fixture.activated == [key("p3")]
    assert fixture.plugin.waiting() == 4
    for task in [*waiting, p1]:
        task.cancel()
    await asyncio.gather(*waiting, p1, return_exceptions=True)
    assert fixture.plugin.waiting() == 0


async def test_final_gang_pod_arrives_at_permit_and_allows_all_waiting_pods() -> None:
    # case "final gang pod arrives at Permit and allows all waiting pods from a gang" (and
    # "... during pod group scheduling cycle", the same here: Permit reads what is assumed)
    fixture = Fixture([PG1, PG2], ["p1", "p2", "p3", "p4", "p5"])
    waiting = {name: fixture.wait(name) for name in ("p2", "p3", "p4", "p5")}
    await asyncio.sleep(0)
    assert await fixture.wait("p1") is None
    assert await waiting["p2"] is None
    assert await waiting["p3"] is None
    await asyncio.sleep(0)
    assert not waiting["p4"].done()  # pg2 has 2 of 4
    assert not waiting["p5"].done()
    for task in (waiting["p4"], waiting["p5"]):
        task.cancel()
    await asyncio.gather(waiting["p4"], waiting["p5"], return_exceptions=True)


async def test_a_pod_that_waits_past_the_timeout_is_rejected() -> None:
    # ours: permitTimeoutDuration ends the wait with the framework's rejection message
    fixture = Fixture([PG1], ["p1", "p2", "p3"], timeout=0.01)
    assert await fixture.wait("p1") == (
        "rejected due to timeout after waiting 0s at plugin GangScheduling"
    )
    assert fixture.plugin.waiting() == 0


def test_held_pods_are_let_in_when_their_pod_group_or_the_last_pod_arrives() -> None:
    # ours, after isSchedulableAfterPodGroupAdded and isSchedulableAfterPodAdded
    fixture = Fixture([], ["p1"])
    assert fixture.plugin.pre_enqueue(key("p1"), PODS["p1"]) is not None
    assert fixture.plugin.pod_group_changed(None, PG1) == []  # 1 of 3 pods
    for name in ("p1", "p2"):
        fixture.plugin.pod_changed(key(name), None, PODS[name])
        fixture.plugin.pre_enqueue(key(name), PODS[name])
    assert fixture.plugin.held() == {key("p1"), key("p2")}
    released = fixture.plugin.pod_changed(key("p3"), None, PODS["p3"])
    assert released == [key("p1"), key("p2")]
    assert fixture.plugin.held() == set()
    # a pod gone leaves the group; a PodGroup deleted is unknown again
    fixture.plugin.pod_changed(key("p3"), PODS["p3"], None)
    assert fixture.plugin.members(("ns1", "pg1")) == {key("p1"), key("p2")}
    fixture.plugin.pod_group_changed(PG1, None)
    assert fixture.plugin.min_count(("ns1", "pg1")) is None
    assert fixture.plugin.pre_enqueue(key("p1"), PODS["p1"]) is not None


def test_readers() -> None:
    assert pod_group_name(PODS["p1"]) == "pg1"
    assert pod_group_name(PODS["non-gang"]) is None
    assert min_count(PG1) == 3
    assert min_count(PG3) is None


def test_the_pod_group_cycle_needs_the_gang_gates() -> None:
    # ours: kube-scheduler runs the PodGroup cycle only with GenericWorkload on
    with pytest.raises(ValueError, match="pod_group_cycle needs gang_scheduling"):
        SchedulerConfig(pod_group_cycle=True)
    with pytest.raises(ValueError, match="permit_timeout must be positive"):
        SchedulerConfig(gang_scheduling=True, permit_timeout=0)


def composite(name: str, policy: Json, parent: str | None = None) -> Json:
    spec: Json = {"schedulingPolicy": policy}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"namespace": "ns1", "name": name}, "spec": spec}  # fmt: skip


def child(name: str, minimum: int, parent: str = "job") -> Json:
    group = pod_group(name, minimum)
    group["spec"]["parentCompositePodGroupName"] = parent
    return group


async def test_a_composite_gang_is_held_and_permitted_as_one_unit() -> None:
    # ours, after 1.37's workload forest (a hierarchy scheduled from its root): the pods of
    # both PodGroups under a gang CompositePodGroup count together
    plugin = GangScheduling(LoopClock(), lambda k: k in assumed)
    assumed: set[PodKey] = set()
    members = {"m": pod("m", "job-master"), "w1": pod("w1", "job-worker"),
               "w2": pod("w2", "job-worker")}  # fmt: skip
    plugin.pod_group_changed(None, child("job-master", 1))
    plugin.pod_group_changed(None, child("job-worker", 2))
    for name, obj in members.items():
        plugin.pod_changed(key(name), None, obj)
    waiting_for = 'waiting for pods\'s pod group "job" to appear in scheduling queue'
    assert plugin.pre_enqueue(key("m"), members["m"]) == waiting_for
    released = plugin.pod_group_changed(None, composite("job", {"gang": {"minGroupCount": 2}}))
    assert released == [key("m")]
    unit = ("ns1", "CompositePodGroup/job")
    assert plugin.group_of(members["w1"]) == unit
    assert plugin.min_count(unit) == 3
    assert plugin.members(unit) == {key("m"), key("w1"), key("w2")}
    assumed.update({key("m"), key("w1")})
    first = asyncio.create_task(plugin.permit(key("w1"), members["w1"], lambda keys: None))
    await asyncio.sleep(0)
    assert not first.done(), "2 of 3: the master's PodGroup alone does not let it bind"
    assumed.add(key("w2"))
    assert await plugin.permit(key("w2"), members["w2"], lambda keys: None) is None
    assert await first is None


def test_a_basic_composite_leaves_each_pod_group_its_own_unit() -> None:
    # ours: children of a basic CompositePodGroup are scheduled independently
    plugin = GangScheduling(LoopClock(), lambda k: False)
    plugin.pod_group_changed(None, composite("job", {"basic": {}}))
    plugin.pod_group_changed(None, child("job-worker", 2))
    assert plugin.group_of(pod("w1", "job-worker")) == ("ns1", "job-worker")
    assert plugin.min_count(("ns1", "job-worker")) == 2


def test_a_1_35_workload_names_its_pod_groups_by_workload_ref() -> None:
    # 1.35 (core/v1 release-1.35 PodSpec.workloadRef): one group per podGroups[] entry and
    # replica key, sized by the entry's policy
    plugin = GangScheduling(LoopClock(), lambda k: False)
    workers = {"name": "workers", "policy": {"gang": {"minCount": 2}}}
    workload = {"kind": "Workload", "metadata": {"namespace": "ns1", "name": "train"},
                "spec": {"podGroups": [workers]}}  # fmt: skip
    plugin.pod_group_changed(None, workload)
    member = {"metadata": {"namespace": "ns1", "name": "w"},
              "spec": {"workloadRef": {"name": "train", "podGroup": "workers",
                                       "podGroupReplicaKey": "1"}}}  # fmt: skip
    assert pod_group_name(member) == "train/workers/1"
    assert plugin.min_count(("ns1", "train/workers/1")) == 2
    plugin.pod_changed(("ns1", "w"), None, member)
    assert plugin.pre_enqueue(("ns1", "w"), member) == WAITING_FOR_MIN_COUNT
