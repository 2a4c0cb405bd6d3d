"""Carrying out evictions. By default a refused eviction (a PodDisruptionBudget) leaves the pod
and gives the preemption or teardown up, counted; only where the admin opts in
(--delete-when-eviction-refused) does a real eviction refused after its dry run passed delete
the pod, so that no victim gang is left running in part; a deletion refused too is logged and
skipped. Teardowns are bounded by the eviction budget."""

from __future__ import annotations

from typing import Any

from extender.book.holds import Hold
from extender.cluster.disruptions import Refused
from extender.cluster.model import Cluster
from extender.gangs.identity import Gang
from extender.preemption.evictor import Evictor
from extender.preemption.limits import DISRUPTION_BUDGET, EVICTION_BUDGET, EvictionBudget
from kube_rdma.core import keys
from kube_rdma.core.objects import Json
from testbed.builders import nodes


class Script:
    """Disruptions whose real evictions of `refused` fail; deletions of `stuck` fail too."""

    def __init__(self, cluster: Cluster, refused: set[str], stuck: set[str]) -> None:
        self.cluster, self.refused, self.stuck = cluster, refused, stuck
        self.calls: list[tuple[str, str]] = []

    async def evict(self, namespace: str, name: str, uid: str, dry_run: bool) -> None:
        self.calls.append(("dry" if dry_run else "evict", name))
        if not dry_run and name in self.refused:
            raise Refused(f"pod {namespace}/{name}: Cannot evict pod")
        if not dry_run:
            self.cluster.delete_pod((namespace, name))

    async def delete(self, namespace: str, name: str, uid: str) -> None:
        self.calls.append(("delete", name))
        if name in self.stuck:
            raise Refused(f"pod {namespace}/{name}: forbidden")
        self.cluster.delete_pod((namespace, name))

    async def event(self, pod: Json, reason: str, message: str) -> None:
        self.calls.append((reason, pod["metadata"]["name"]))


def setup(
    refused: set[str], stuck: set[str], delete: bool = True, budget: EvictionBudget | None = None
) -> tuple[Cluster, Script, Evictor]:
    cluster = Cluster()
    cluster.replace_nodes([nodes.node("n1", nodes.hgx())])
    gang = {keys.GANG: "g", keys.GANG_SIZE: "3"}
    cluster.replace_pods(
        [nodes.pod(f"g-{i}", node_name="n1", phase="Running", annotations=gang) for i in range(3)]
    )
    script = Script(cluster, refused, stuck)
    REFUSALS.clear()
    evictor = Evictor(cluster, script, lambda *a: REFUSALS.append(a), budget, delete)
    return cluster, script, evictor


REFUSALS: list[Any] = []


def hold() -> Hold:
    pods = tuple(("team-a", f"g-{i}") for i in range(3))
    return Hold(
        ("team-a", "urgent"), 10, "leaf-a", frozenset({"n1"}), 8, 0.0, (("gang team-a/g", pods),)
    )


async def test_a_refused_real_eviction_deletes_the_rest_of_the_victim_gang() -> None:
    cluster, script, evictor = setup(refused={"g-1"}, stuck=set())
    await evictor.run(hold())
    assert script.calls[:3] == [("dry", "g-0"), ("dry", "g-1"), ("dry", "g-2")]
    assert ("delete", "g-1") in script.calls
    assert list(cluster.pods()) == []
    assert (evictor.preemptions, evictor.evicted) == (1, 3)


async def test_a_deletion_refused_too_is_skipped_and_the_others_go() -> None:
    cluster, _, evictor = setup(refused={"g-1"}, stuck={"g-1"})
    await evictor.run(hold())
    assert [p["metadata"]["name"] for p in cluster.pods()] == ["g-1"]
    assert evictor.evicted == 2


async def test_the_rest_of_a_broken_gang_is_evicted_or_deleted() -> None:
    cluster, script, evictor = setup(refused={"g-2"}, stuck=set())
    gang = Gang("team-a", "g", 3, keys.GANG)
    evictor.tear_down_gang(gang, [("team-a", "g-1"), ("team-a", "g-2"), ("team-a", "gone")])
    await evictor.drain()
    assert [p["metadata"]["name"] for p in cluster.pods()] == ["g-0"]
    assert ("delete", "g-2") in script.calls
    assert ("GangBroken", "g-1") in script.calls
    evictor.tear_down_gang(gang, [])
    await evictor.drain()


async def test_a_broken_gang_member_that_cannot_be_deleted_is_skipped() -> None:
    _, script, evictor = setup(refused={"g-1"}, stuck={"g-1"})
    evictor.tear_down_gang(Gang("team-a", "g", 3, keys.GANG), [("team-a", "g-1")])
    await evictor.drain()
    assert evictor.evicted == 0
    assert script.calls == [("evict", "g-1"), ("delete", "g-1")]


async def test_by_default_a_refused_eviction_leaves_the_pod_and_gives_the_preemption_up() -> None:
    cluster, script, evictor = setup(refused={"g-1"}, stuck=set(), delete=False)
    await evictor.run(hold())
    assert ("delete", "g-1") not in script.calls
    assert ("evict", "g-2") not in script.calls, "the preemption stops at the refusal"
    assert sorted(p["metadata"]["name"] for p in cluster.pods()) == ["g-1", "g-2"]
    assert [(a[2], a[3]) for a in REFUSALS] == [([("team-a", "g-1")], True)]
    assert evictor.budget.refusals[DISRUPTION_BUDGET] == 1
    assert evictor.budget.evictions["Preempted"] == 1


async def test_by_default_a_teardown_never_deletes_a_pod_its_budget_protects() -> None:
    cluster, script, evictor = setup(refused={"g-1"}, stuck=set(), delete=False)
    gang = Gang("team-a", "g", 3, keys.GANG)
    assert evictor.tear_down_gang(gang, [("team-a", "g-1"), ("team-a", "g-2")])
    await evictor.drain()
    assert script.calls == [("evict", "g-1")]
    assert sorted(p["metadata"]["name"] for p in cluster.pods()) == ["g-0", "g-1", "g-2"]
    assert evictor.budget.refusals[DISRUPTION_BUDGET] == 1


async def test_a_teardown_the_eviction_budget_has_no_room_for_is_not_made() -> None:
    clock = [0.0]
    budget = EvictionBudget(2, lambda: clock[0])
    _, script, evictor = setup(refused=set(), stuck=set(), budget=budget)
    gang = Gang("team-a", "g", 3, keys.GANG)
    pods = [("team-a", f"g-{i}") for i in range(3)]
    assert not evictor.tear_down_gang(gang, pods)
    await evictor.drain()
    assert script.calls == []
    assert budget.refusals[EVICTION_BUDGET] == 1
    assert evictor.tear_down_gang(gang, pods[:2])
    await evictor.drain()
    assert budget.left() == 0
    clock[0] += 61
    assert budget.left() == 2
