"""The failover harness's observer, fed synthetic pod events: what it reports is what happened."""

from __future__ import annotations

from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from testbed.observer import GPU, Findings, Observer, Spell, requested_gpus


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def member(gang: str, i: int, node: str = "", gpus: int = 8) -> Json:
    pod = nodes.pod(f"{gang}-{i}", gpus=gpus, annotations={keys.GANG: gang, keys.GANG_SIZE: "2"})
    if node:
        pod["spec"]["nodeName"] = node
    return pod


def observer() -> Observer:
    return Observer(Findings(), gpus_per_node=8, clock=Clock())


def test_a_pod_bound_to_a_second_node_is_reported() -> None:
    seen = observer()
    seen.replace([member("g", 0)])
    seen.event("MODIFIED", member("g", 0, "n1"))
    seen.event("MODIFIED", member("g", 0, "n1"))  # the same binding again is no news
    seen.event("MODIFIED", member("g", 0, "n2"))
    assert seen.findings.bound_twice == ["g-0: n1, then n2"]


def test_gpus_are_read_from_each_pod() -> None:
    seen = observer()
    seen.event("ADDED", member("a", 0, "n1", gpus=4))
    seen.event("ADDED", member("b", 0, "n1", gpus=4))
    assert seen.findings.overcommitted == []
    seen.event("ADDED", member("c", 0, "n1", gpus=1))
    assert seen.findings.overcommitted == ["n1: 9 GPUs"]


def test_a_deleted_pod_frees_its_gpus() -> None:
    seen = observer()
    seen.event("ADDED", member("a", 0, "n1"))
    seen.event("DELETED", member("a", 0, "n1"))
    seen.event("ADDED", member("b", 0, "n1"))
    assert seen.findings.overcommitted == []


def test_a_gang_bound_member_by_member_has_one_spell_that_ends_whole() -> None:
    seen = observer()
    seen.replace([member("g", 0), member("g", 1)])
    seen.event("MODIFIED", member("g", 0, "n1"))
    assert seen.partly_bound() == ["g"]
    assert seen.findings.spells == [Spell("g", 1.0, None, "open")]
    seen.event("MODIFIED", member("g", 1, "n2"))
    assert seen.partly_bound() == []
    assert seen.findings.spells == [Spell("g", 1.0, 2.0, "whole")]
    assert seen.findings.gangs_whole == {"g"}
    assert seen.bound_since(2.0)
    assert not seen.bound_since(2.5)


def test_a_gang_left_partly_bound_stays_open() -> None:
    """Its bound member deleted before the rest bound: the spell never ends whole."""
    seen = observer()
    seen.replace([member("g", 0), member("g", 1)])
    seen.event("MODIFIED", member("g", 0, "n1"))
    seen.event("DELETED", member("g", 0, "n1"))
    assert seen.findings.spells == [Spell("g", 1.0, None, "open")]
    assert seen.findings.gangs_whole == set()


def test_a_whole_gang_that_loses_a_member_is_partly_bound_until_the_rest_is_gone() -> None:
    """A preemption that took part of a running gang: one member evicted, the other still
    bound. Only the gang's size tells it from a whole gang of one."""
    seen = observer()
    seen.replace([member("g", 0, "n1"), member("g", 1, "n2")])
    assert seen.partly_bound() == []
    seen.event("DELETED", member("g", 0, "n1"))
    assert seen.partly_bound() == ["g"]
    seen.event("DELETED", member("g", 1, "n2"))
    assert seen.partly_bound() == []


def test_pods_outside_gangs_are_not_gangs() -> None:
    seen = observer()
    seen.event("ADDED", nodes.pod("single", node_name="n1"))
    assert (seen.partly_bound(), seen.findings.spells, seen.findings.gangs_whole) == ([], [], set())


def test_requested_gpus_follow_the_schedulers_sum() -> None:
    pod = nodes.pod("p", gpus=2)
    side = {"name": "side", "resources": {"requests": {GPU: "3"}}}
    pod["spec"]["containers"].append(side)
    pod["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {GPU: "6"}}}]
    assert requested_gpus(pod) == 6
    pod["spec"]["initContainers"] = [{"name": "i"}]
    assert requested_gpus(pod) == 5
    assert requested_gpus({"metadata": {}}) == 0
