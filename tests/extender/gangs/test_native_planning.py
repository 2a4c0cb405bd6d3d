"""How the planner, the quorum, the bind barrier and the broken-gang teardown treat a gang of
Kubernetes' own (a scheduling.k8s.io group): its topology constraint is a required level, a
minCount beyond the whole cluster is refused at once, and a gang kube-scheduler's
GangScheduling holds (pkg/scheduler/framework/plugins/gangscheduling: PreEnqueue until minCount
pods exist, Permit waiting until minCount are placed, then all bind at once) gets no second
barrier, no second quorum and no teardown while it is being placed."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import cast

from extender.cluster.model import Cluster
from extender.gangs.barrier import Barrier
from extender.gangs.identity import Gang
from extender.gangs.native import beyond_cluster, group_placement
from extender.gangs.planner import Planner
from extender.gangs.quorum import Presence
from extender.levels.placement import Placement
from extender.podview import PodView
from extender.preemption.broken import BrokenGangs
from kube_rdma.core import keys
from kube_rdma.core.frameworks.kubernetes_scheduling import NativeGroup
from kube_rdma.core.objects import Json
from testbed.builders import nodes
from tests.extender.test_app import serving

NS = "team-a"
GROUP = NativeGroup("PodGroup", NS, "llama", "v1beta1", 2, (keys.LEAF,))
HELD = Gang(NS, "llama", 2, "PodGroup scheduling.k8s.io/v1beta1", native=GROUP, held=True)


def podgroup(min_count: int, **spec: object) -> Json:
    body = {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "llama", "namespace": NS}, "spec": body}  # fmt: skip


def member(name: str, node: str | None = None) -> Json:
    pod = nodes.pod(name, gpus=8, node_name=node, phase="Running" if node else "Pending")
    pod["metadata"]["uid"] = f"uid-{name}"
    pod["spec"]["schedulingGroup"] = {"podGroupName": "llama"}
    return pod


def test_the_groups_topology_is_the_required_level_unless_the_pod_says_another() -> None:
    assert group_placement(Placement(), HELD) == Placement(
        required=keys.LEAF, source="PodGroup scheduling.k8s.io/v1beta1"
    )
    same = Placement(required=keys.LEAF, source="kube-rdma.io")
    assert group_placement(same, HELD) == same
    other = group_placement(Placement(required="zone", source="kube-rdma.io"), HELD)
    assert other.problem == (
        f"kube-rdma.io requires topology 'zone', but its PodGroup {NS}/llama "
        f"(scheduling.k8s.io/v1beta1) requires {keys.LEAF!r} (schedulingConstraints.topology); "
        "make them agree"
    )
    plain = replace(HELD, native=replace(GROUP, topology=()))
    assert group_placement(Placement(), plain) == Placement()


async def test_a_min_count_the_whole_cluster_cannot_hold_is_refused_with_the_numbers() -> None:
    objects = [nodes.node("gpu-1", nodes.hgx()), nodes.node("gpu-2", nodes.hgx()),
               podgroup(5), *(member(f"m-{i}") for i in range(5))]  # fmt: skip
    async with serving(objects) as client:
        status, answer = await client.post(
            "filter", {"Pod": member("m-0"), "NodeNames": ["gpu-1", "gpu-2"]}
        )
    assert status == 200
    assert answer["NodeNames"] == []
    reasons = {**answer["FailedNodes"], **answer["FailedAndUnresolvableNodes"]}
    assert set(reasons.values()) == {
        f"gang {NS}/llama: its PodGroup scheduling.k8s.io/v1beta1 needs minCount 5 x (8 GPU, 8 "
        "rails), 5 still to place, but the whole cluster holds 2 even with nothing else running; "
        "it can never be placed"
    }


def test_what_fits_the_cluster_is_not_refused() -> None:
    view = cast(PodView, None)
    assert beyond_cluster(HELD, view, 2, [(1, {}), (1, {})]) is None


async def test_the_groups_topology_shows_in_explain() -> None:
    objects = [nodes.node("gpu-1", nodes.hgx()), podgroup(2, schedulingConstraints={
        "topology": [{"key": keys.LEAF}]}), member("m-0"), member("m-1")]  # fmt: skip
    async with serving(objects) as client:
        status, text = await client.get(f"/explain?namespace={NS}&name=m-0")
    assert status == 200
    gang = json.loads(text)["gang"]
    assert gang["levels"]["asks"] == f"required {keys.LEAF} (PodGroup scheduling.k8s.io/v1beta1)"
    assert gang["native"]["topology"] == [keys.LEAF]


def test_a_held_gang_is_not_made_to_wait_for_its_members_a_second_time() -> None:
    assert Presence(HELD, 1, 0, 100).refusal() is None
    barrier_kept = replace(HELD, held=False)
    assert Presence(barrier_kept, 1, 0, 100).refusal() == (
        f"gang {NS}/llama: 1 of 2 members exist; waiting for the rest"
    )


async def test_a_held_gang_binds_without_the_extenders_barrier() -> None:
    async def bind(pod: tuple[str, str], uid: str, node: str) -> None:
        raise AssertionError("the barrier binds nothing itself")

    barrier = Barrier(cast(Planner, None), Cluster(), 0.01, bind)
    assert await barrier.wait((NS, "m-0"), "uid-m-0", HELD, "gpu-1") is True


def test_a_gang_kube_scheduler_is_still_placing_is_never_torn_down() -> None:
    torn: list[str] = []
    placing = HELD
    placed = replace(HELD, native=replace(GROUP, scheduled=True))
    gang = placing

    def tear_down(g: Gang, pods: list[tuple[str, str]]) -> bool:
        torn.append(str(g))
        return True

    now = [0.0]
    broken = BrokenGangs(1.0, lambda: now[0], lambda pod: gang, tear_down)
    whole = [member("m-0", "gpu-1"), member("m-1", "gpu-2")]
    for pods in (whole, whole[:1]):
        broken.check(pods)
        now[0] += 20.0
        broken.check(pods)
        now[0] += 20.0
    assert torn == [], "never seen whole as kube-scheduler's: it is being placed"
    gang = placed
    for pods in (whole, whole[:1], whole[:1]):
        broken.check(pods)
        now[0] += 20.0
    assert torn == [f"{NS}/llama"]


async def test_explain_says_a_pod_waits_for_its_group_to_exist() -> None:
    objects = [nodes.node("gpu-1", nodes.hgx()), member("m-0")]
    async with serving(objects) as client:
        status, answer = await client.post("filter", {"Pod": member("m-0"), "NodeNames": ["gpu-1"]})
        _, text = await client.get(f"/explain?namespace={NS}&name=m-0&format=table")
    waiting = (
        f"gang {NS}/llama: the pod names PodGroup llama, which does not exist yet; waiting for "
        "it, as kube-scheduler does"
    )
    assert status == 200
    assert answer["FailedAndUnresolvableNodes"] == {"gpu-1": waiting}
    assert f"no plan now: {waiting}" in text
